/**
 * @internal `-m dscp` and `-j DSCP` (libxt_dscp, libxt_DSCP): the value printed as `0x%02x`; a
 * class name (`--dscp-class AF41`) is stored as its value and prints as `--dscp 0x22`.
 */
import { paramProblem } from '../failure.ts';
import { hex2, uintBase0, type XtDefinition } from './define.ts';

const CLASSES: ReadonlyMap<string, number> = new Map([
  ['CS0', 0], ['CS1', 8], ['CS2', 16], ['CS3', 24], ['CS4', 32], ['CS5', 40], ['CS6', 48], ['CS7', 56],
  ['BE', 0], ['AF11', 10], ['AF12', 12], ['AF13', 14], ['AF21', 18], ['AF22', 20], ['AF23', 22],
  ['AF31', 26], ['AF32', 28], ['AF33', 30], ['AF41', 34], ['AF42', 36], ['AF43', 38], ['EF', 46],
]);

function value(ext: string, opt: string) {
  return (v: readonly string[], at: number): readonly string[] => {
    const n = uintBase0(v[0] ?? '');
    if (n === undefined || n > 63) throw paramProblem(`${ext}: bad value for option "--${opt}", or out of range (0-63).\n`, at);
    return [hex2(n)];
  };
}

function cls(v: readonly string[], at: number): readonly string[] {
  const n = CLASSES.get((v[0] ?? '').toUpperCase());
  if (n === undefined) throw paramProblem(`Invalid DSCP value \`${v[0] ?? ''}'`, at);
  return [hex2(n)];
}

export const DSCP_MATCH: XtDefinition = {
  name: 'dscp',
  options: [
    { name: 'dscp', args: 1, invert: true, parse: value('dscp', 'dscp') },
    { name: 'dscp-class', args: 1, invert: true, as: 'dscp', parse: cls },
  ],
  finish(s) {
    if (!s.has('dscp')) throw paramProblem('DSCP match: Parameter --dscp is required');
  },
  list: (args) => `DSCP match ${args[0] === '!' ? '!' : ''}${args[args.length - 1] ?? ''}`,
};

export const DSCP_TARGET: XtDefinition = {
  name: 'DSCP',
  options: [
    { name: 'set-dscp', args: 1, parse: value('DSCP', 'set-dscp') },
    { name: 'set-dscp-class', args: 1, as: 'set-dscp', parse: cls },
  ],
  tables: ['mangle'],
  finish(s) {
    if (!s.has('set-dscp')) throw paramProblem('DSCP target: Parameter --set-dscp is required');
  },
  list: (args) => `DSCP set ${args[1] ?? ''}`,
};
