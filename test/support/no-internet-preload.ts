import { installNoInternetGuard } from './no-internet-guard.ts';

// `node --import` preload for the processes tests start (see no-internet.ts): the same guard, its
// refusals on stderr, where the test reading the process's output sees them.
installNoInternetGuard((refusal) => process.stderr.write(`[no-internet] ${refusal.message}\n`));
