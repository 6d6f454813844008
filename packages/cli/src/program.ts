/**
 * The `netsim` program: its subcommands, and one place that maps every way a run can end to the
 * documented exit status (see `errors.ts`). Usage errors from commander exit 2 like every other
 * bad input; a user's mistake prints one message on stderr, never a stack trace.
 *
 * Start-up: each subcommand's module (and the packages it needs: the simulator, the netfilter
 * model, …) is imported only when that subcommand runs. `netsim --help` lists the subcommands
 * from the table below and loads none of them; a test checks the table against the commands.
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError, Help } from 'commander';
import { EXIT, UsageError, messageOf } from './errors.ts';

function version(): string {
  return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

/** One subcommand: how `netsim --help` lists it, and how to register the real command. */
export interface CommandEntry {
  readonly name: string;
  /** The term `netsim --help` shows, like `replay [options] [paths...]`. */
  readonly term: string;
  readonly description: string;
  readonly register: (p: Command) => Promise<void>;
}

/** Every subcommand, in the order `netsim --help` lists them. */
export const COMMANDS: readonly CommandEntry[] = [
  {
    name: 'trace',
    term: 'trace [options]',
    description: 'trace a packet through the netfilter tables of one hook of an iptables-save dump',
    register: async (p) => void p.addCommand((await import('./commands/trace.ts')).traceCommand()),
  },
  {
    name: 'ruleset',
    term: 'ruleset',
    description: 'iptables-save text: normalise and compare rulesets',
    register: async (p) => (await import('./commands/ruleset.ts')).registerRulesetCommand(p),
  },
  {
    name: 'list',
    term: 'list [options] [chain] [rulenum]',
    description: 'print what `iptables -L` (or -S) prints on the host a saved iptables-save dump came from',
    register: async (p) => void p.addCommand((await import('./commands/list.ts')).listCommand()),
  },
  {
    name: 'nft',
    term: 'nft',
    description: 'nftables text: apply nft -f files and print nft list ruleset; compare rulesets',
    register: async (p) => (await import('./commands/nft.ts')).registerNftCommand(p),
  },
  {
    name: 'replay',
    term: 'replay [options] [paths...]',
    description: 'run scenario files and check each against its expectation (default: the incident scenarios shipped with netsim)',
    register: async (p) => void p.addCommand((await import('./commands/replay.ts')).replayCommand()),
  },
  {
    name: 'fuzz',
    term: 'fuzz [options]',
    description: "search generated histories for a counterexample to a controller's invariants",
    register: async (p) => void p.addCommand((await import('./commands/fuzz.ts')).fuzzCommand()),
  },
  {
    name: 'report',
    term: 'report [options] <trace>',
    description: 'write a self-contained HTML timeline report of a saved --trace (JSON lines)',
    register: async (p) => void p.addCommand((await import('./commands/report.ts')).reportCommand()),
  },
];

function base(): Command {
  return new Command().name('netsim').description('Deterministic network simulator for Kubernetes node-networking controllers').version(version());
}

/** The program with every subcommand registered (loads every command module). */
export async function program(): Promise<Command> {
  const p = base();
  for (const c of COMMANDS) await c.register(p);
  return p;
}

/**
 * The program for one command line: the subcommand it names fully registered, the others as
 * entries that only list themselves (`netsim --help`, and commander's "unknown command" hints).
 */
export async function programFor(argv: readonly string[]): Promise<Command> {
  const p = base();
  const terms = new Map(COMMANDS.map((c) => [c.name, c.term]));
  const help = new Help();
  p.configureHelp({ subcommandTerm: (c) => terms.get(c.name()) ?? help.subcommandTerm(c) });
  // `netsim help fuzz` shows the help of `fuzz`, which needs the real command.
  const wanted = argv[2] === 'help' ? argv[3] : argv[2];
  for (const c of COMMANDS) {
    if (c.name === wanted) await c.register(p);
    else p.addCommand(new Command(c.name).description(c.description));
  }
  return p;
}

/** Commander exits the process on usage errors by default; make every command throw instead. */
function throwOnExit(c: Command): void {
  c.exitOverride();
  for (const sub of c.commands) throwOnExit(sub);
}

/** Runs the command line; returns the exit status. */
export async function main(argv: readonly string[], stderr: (s: string) => void = (s) => void process.stderr.write(s)): Promise<number> {
  const p = await programFor(argv);
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
