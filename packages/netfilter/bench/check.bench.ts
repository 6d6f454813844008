/**
 * `iptables -C` as a controller polls with it: `exec(ruleset, ['-C', chain, …])` against the same
 * ruleset again and again, for a rule that is there (the last of the chain, so the whole chain is
 * compared) and one that is not (exit status 1 with the real tool's stderr).
 *
 * Run with `pnpm bench check`. Measures, never asserts: the median over 5 rounds of CPU time per
 * command, for chains of 20 and 1000 rules.
 */
import { exec, parseSave, type Ruleset } from '../src/index.ts';

function chain(rules: number): Ruleset {
  const lines = ['*filter', ':NETSIM-CHK - [0:0]'];
  for (let i = 0; i < rules; i++) {
    lines.push(`-A NETSIM-CHK -s 198.18.${i >> 8}.${i & 255}/32 -p tcp -m comment --comment "rule ${i}" -m tcp --dport ${8000 + (i % 1000)} -j ACCEPT`);
  }
  lines.push('COMMIT', '');
  return parseSave(lines.join('\n'));
}

function perOpMicros(ruleset: Ruleset, argv: readonly string[], n: number): number {
  for (let i = 0; i < Math.min(n, 2000); i++) exec(ruleset, argv);
  const rounds: number[] = [];
  for (let k = 0; k < 5; k++) {
    const cpu = process.cpuUsage();
    for (let i = 0; i < n; i++) exec(ruleset, argv);
    const used = process.cpuUsage(cpu);
    rounds.push((used.user + used.system) / n);
  }
  rounds.sort((a, b) => a - b);
  return rounds[2] as number;
}

console.log('| rules in chain | -C found (last rule) µs/op | -C not found µs/op |');
console.log('|---|---|---|');
for (const [rules, n] of [
  [20, 20000],
  [1000, 2000],
] as const) {
  const rs = chain(rules);
  const last = rules - 1;
  const spec = (i: number): string[] => ['-s', `198.18.${i >> 8}.${i & 255}`, '-p', 'tcp', '-m', 'comment', '--comment', `rule ${i}`, '-m', 'tcp', '--dport', String(8000 + (i % 1000)), '-j', 'ACCEPT'];
  const found = ['-C', 'NETSIM-CHK', ...spec(last)];
  const missing = ['-C', 'NETSIM-CHK', ...spec(rules + 5)];
  if (exec(rs, found).exitCode !== 0 || exec(rs, missing).exitCode !== 1) throw new Error('benchmark rules are not what they should be');
  console.log(`| ${rules} | ${perOpMicros(rs, found, n).toFixed(1)} | ${perOpMicros(rs, missing, n).toFixed(1)} |`);
}
