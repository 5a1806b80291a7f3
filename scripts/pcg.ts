#!/usr/bin/env node
import { existsSync } from 'node:fs';
import path from 'node:path';
import { runCli } from './cli/run-cli.ts';

const root = path.resolve(import.meta.dirname, '..');
// The same settings as `npm start`: REST_PORT, DATABASE_URL, … from the project's .env, the environment first.
if (existsSync(path.join(root, '.env'))) process.loadEnvFile(path.join(root, '.env'));

const status = await runCli(process.argv.slice(2), process.env, { out: process.stdout, err: process.stderr });
// `pcg mcp` may leave handles of the stores it held; it is done once its session closed.
if (process.argv[2] === 'mcp') process.exit(status);
process.exitCode = status;
