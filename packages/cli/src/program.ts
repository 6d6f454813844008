/**
 * The `netsim` program: its subcommands, and one place that maps every way a run can end to the
 * documented exit status (see `errors.ts`). Usage errors from commander exit 2 like every other
 * bad input; a user's mistake prints one message on stderr, never a stack trace.
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { registerRulesetCommand } from './commands/ruleset.ts';
import { fuzzCommand } from './commands/fuzz.ts';
import { replayCommand } from './commands/replay.ts';
import { traceCommand } from './commands/trace.ts';
import { registerNftCommand } from './commands/nft.ts';
import { reportCommand } from './commands/report.ts';
import { listCommand } from './commands/list.ts';
import { EXIT, UsageError, messageOf } from './errors.ts';

function version(): string {
  return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

/** The program with every subcommand registered. */
export function program(): Command {
  const p = new Command();
  p.name('netsim').description('Deterministic network simulator for Kubernetes node-networking controllers').version(version());
  p.addCommand(traceCommand());
  registerRulesetCommand(p);
  p.addCommand(listCommand());
  registerNftCommand(p);
  // scenario: replay and fuzz
  p.addCommand(replayCommand());
  p.addCommand(fuzzCommand());
  p.addCommand(reportCommand());
  return p;
}

/** Commander exits the process on usage errors by default; make every command throw instead. */
function throwOnExit(c: Command): void {
  c.exitOverride();
  for (const sub of c.commands) throwOnExit(sub);
}

/** Runs the command line; returns the exit status. */
export async function main(argv: readonly string[], stderr: (s: string) => void = (s) => void process.stderr.write(s)): Promise<number> {
  const p = program();
  throwOnExit(p);
  try {
    await p.parseAsync([...argv]);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (e) {
    if (e instanceof CommanderError) {
      // --help and --version end through here too, with status 0; commander printed the message.
      return e.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (e instanceof UsageError) {
      stderr(`netsim: ${e.message}\n`);
      return EXIT.usage;
    }
    stderr(`netsim: internal error (please report it with the command line):\n${e instanceof Error ? (e.stack ?? e.message) : messageOf(e)}\n`);
    return EXIT.internal;
  }
}
