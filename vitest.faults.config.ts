import { defineConfig } from 'vitest/config';
import base from './vitest.config.ts';

/** The fault tests: slow, and loud on a small machine, so they run on their own after the main suite (`npm run test:faults`). */
export default defineConfig({ ...base, test: { ...base.test, include: ['test/**/*.fault.test.ts'], exclude: ['**/node_modules/**'], fileParallelism: false } });
