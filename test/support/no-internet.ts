import { pathToFileURL } from 'node:url';
import path from 'node:path';
import { installNoInternetGuard } from './no-internet-guard.ts';

/**
 * Vitest setup file (both configs): refuses every connection a test worker opens to anything but loopback
 * or a unix socket, and hands the same guard to the node processes the tests start (the launcher and its
 * services inherit `NODE_OPTIONS`), through a preload.
 */
installNoInternetGuard((refusal) => process.stderr.write(`[no-internet] ${refusal.message}\n`));

const preload = `--import=${pathToFileURL(path.join(import.meta.dirname, 'no-internet-preload.ts')).href}`;
const inherited = process.env.NODE_OPTIONS ?? '';
if (!inherited.includes(preload)) process.env.NODE_OPTIONS = `${inherited} ${preload}`.trim();
