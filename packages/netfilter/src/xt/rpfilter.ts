/**
 * @internal
 * `-m rpfilter`, as libxt_rpfilter reads and prints it (checked against iptables 1.8.9): four
 * flags, printed in the tool's order (`--loose --validmark --accept-local --invert`) whatever the
 * order given; none of them takes `!`. The kernel takes the match in the raw and mangle tables,
 * from PREROUTING only (the hook is checked where chains are checked). Parsed and printed, not
 * evaluated: the answer depends on the host's routes for the reversed packet.
 */
import { OptionTable, OptionTracker, type ExtensionInstance, type OptionUse, type ParseEnv } from '../extension.ts';
import type { MatchModule } from '../matches.ts';
import type { Hook, Match } from '../types.ts';

const FLAGS = ['loose', 'validmark', 'accept-local', 'invert'] as const;
const RPFILTER_OPTIONS = new OptionTable(FLAGS.map((name) => ({ name, args: 0 as const })));

class RpfilterInstance extends OptionTracker implements ExtensionInstance<Match> {
  readonly name = 'rpfilter';
  readonly spec = RPFILTER_OPTIONS;
  constructor() {
    super('rpfilter', RPFILTER_OPTIONS);
  }
  option(use: OptionUse): void {
    this.use(use, RPFILTER_OPTIONS.exact(use.name)!);
  }
  finish(env: ParseEnv): Match {
    if (env.table !== 'raw' && env.table !== 'mangle') env.rejectRule('Invalid argument');
    return { kind: 'unknown', module: 'rpfilter', args: FLAGS.filter((f) => this.has(f)).map((f) => `--${f}`) };
  }
}

/** The hooks the kernel takes the match from. */
export const RPFILTER_HOOKS: readonly Hook[] = ['PREROUTING'];

/** The `-m rpfilter` module for the registry. */
export const RPFILTER_MODULE: MatchModule = {
  name: 'rpfilter',
  options: RPFILTER_OPTIONS,
  create: (): ExtensionInstance<Match> => new RpfilterInstance(),
  // `iptables -L` text: `rpfilter` and the flags without dashes.
  list: (m) => ['rpfilter', ...(m as Extract<Match, { kind: 'unknown' }>).args.map((a) => a.slice(2))].join(' '),
  hooks: () => RPFILTER_HOOKS,
  tables: ['raw', 'mangle'],
};
