import { readdirSync, readFileSync } from 'node:fs';

/** The process id of one of the launcher's four services, read from /proc (its parent is the launcher). */
export function servicePid(launcherPid: number, service: string): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent !== launcherPid) continue;
      const commandLine = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (commandLine.includes(`services/${service}/src/main.ts`)) return Number(entry);
    } catch {
      // The process ended while we looked.
    }
  }
  return undefined;
}
