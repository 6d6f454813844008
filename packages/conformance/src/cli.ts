/**
 * `pnpm conformance [--runs N] [--seed S] [--replay I] [--profiles a,b] [--no-shrink] [--no-legacy]`:
 * a long differential campaign against the real kernel, with progress, a summary and every
 * disagreement printed with its ruleset, packet, both outcomes, netsim's trace and the command
 * that replays it. Exit status: 0 when every disagreement is a known one, 1 when a new one was
 * found, 2 when the machine cannot run the campaign (the line says why).
 */
import { release } from 'node:os';
import { runCampaign, type CampaignResult, type Checked } from './campaign.ts';
import { checkEnvironment, checkLegacy } from './environment.ts';
import { PROFILES, type Profile } from './generate.ts';
import type { KnownDisagreement } from './known.ts';
import { Lab } from './lab.ts';
import { formatDisagreement } from './runner.ts';

interface Args {
  readonly runs: number;
  readonly seed: number;
  readonly replay?: number;
  readonly profiles: readonly Profile[];
  readonly shrink: boolean;
  readonly legacy: boolean;
}

const USAGE = 'usage: pnpm conformance [--runs N] [--seed S] [--replay I] [--profiles forward,reject,local] [--no-shrink] [--no-legacy]';

function fail(message: string): never {
  process.stderr.write(`conformance: ${message}\n${USAGE}\n`);
  process.exit(2);
}

function int(flag: string, v: string | undefined): number {
  if (v === undefined || !/^\d+$/.test(v)) fail(`${flag} needs a non-negative integer, got ${v === undefined ? 'nothing' : `"${v}"`}`);
  return Number(v);
}

function parseArgs(argv: readonly string[]): Args {
  let runs = 500;
  // The default seed is the one wall-clock read: it is printed first and every result derives from it.
  let seed = Date.now() % 1_000_000_007; // eslint-disable-line no-restricted-properties -- tidy-allow: a campaign's default seed, printed first
  let replay: number | undefined;
  let profiles: readonly Profile[] = PROFILES;
  let shrink = true;
  let legacy = true;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    const [flag, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const value = (): string | undefined => inline ?? argv[++i];
    switch (flag) {
      case '--runs':
        runs = int(flag, value());
        break;
      case '--seed':
        seed = int(flag, value());
        break;
      case '--replay':
        replay = int(flag, value());
        break;
      case '--profiles': {
        const list = (value() ?? '').split(',').filter((p) => p !== '');
        const bad = list.filter((p) => !(PROFILES as readonly string[]).includes(p));
        if (list.length === 0 || bad.length > 0) fail(`--profiles takes a comma list of ${PROFILES.join(', ')}${bad.length > 0 ? `; unknown: ${bad.join(', ')}` : ''}`);
        profiles = list as Profile[];
        break;
      }
      case '--no-shrink':
        shrink = false;
        break;
      case '--no-legacy':
        legacy = false;
        break;
      case '--help':
      case '-h':
        process.stdout.write(`${USAGE}\n`);
        process.exit(0);
        break;
      default:
        fail(`unknown argument "${a}"`);
    }
  }
  return { runs, seed, ...(replay === undefined ? {} : { replay }), profiles, shrink, legacy };
}

function replayCommand(args: Args, index: number): string {
  const profiles = args.profiles.length === PROFILES.length ? '' : ` --profiles ${args.profiles.join(',')}`;
  return `pnpm conformance --seed ${args.seed} --replay ${index}${profiles}`;
}

function confirmation(k: KnownDisagreement): string {
  return k.legacyAgrees ? 'iptables-legacy agrees with netsim' : 'iptables-legacy agrees with the kernel via iptables-nft';
}

function summary(args: Args, r: CampaignResult, tool: string, legacyUsed: boolean): string {
  const known = new Map<string, { known: KnownDisagreement; confirmed: boolean; cases: number[] }>();
  const fresh: number[] = [];
  for (const d of r.disagreements) {
    const v = d.checked.verdict;
    if (v.kind === 'known') {
      const k = known.get(v.known.id) ?? { known: v.known, confirmed: true, cases: [] };
      k.cases.push(d.index);
      k.confirmed = k.confirmed && v.confirmed;
      known.set(v.known.id, k);
    } else if (v.kind === 'new') fresh.push(d.index);
  }
  const lines = [
    '',
    `conformance summary: seed ${args.seed}, profiles ${args.profiles.join(',')}, ${tool}, kernel ${release()}`,
    `  cases run: ${r.runs}`,
    `  agreed:    ${r.agreed}`,
    ...(r.undecided.length === 0 ? [] : [`  undecided: ${r.undecided.length} (netsim cannot evaluate something in them; cases ${r.undecided.join(', ')})`]),
    `  known disagreements: ${r.disagreements.length - fresh.length}`,
  ];
  for (const [id, k] of [...known].sort(([a], [b]) => a.localeCompare(b))) {
    const how = k.confirmed ? `confirmed: ${confirmation(k.known)}` : legacyUsed ? 'not confirmed' : 'pattern only, iptables-legacy not used';
    lines.push(`    ${id} ×${k.cases.length} (${how}): ${k.known.title}; cases ${k.cases.join(', ')}`);
  }
  lines.push(`  NEW disagreements: ${fresh.length}${fresh.length === 0 ? '' : ` (cases ${fresh.join(', ')})`}`);
  return lines.join('\n');
}

function main(): void {
  const args = parseArgs(process.argv.slice(2));
  const env = checkEnvironment();
  if (!env.ok) {
    process.stderr.write(`conformance: cannot run here: ${env.reason}\n`);
    process.exit(2);
  }
  const legacyEnv = args.legacy ? checkLegacy() : { ok: false as const, reason: 'disabled by --no-legacy' };
  const lab = Lab.create();
  const legacy = legacyEnv.ok ? Lab.create({ backend: 'legacy' }) : undefined;
  const tool = lab.toolVersion();
  process.stdout.write(`conformance: seed ${args.seed}, ${args.replay === undefined ? `${args.runs} cases` : `replaying case ${args.replay}`}, ${tool}, kernel ${release()}\n`);
  if (legacy === undefined) process.stdout.write(`conformance: known disagreements not confirmed on iptables-legacy: ${legacyEnv.ok ? '' : legacyEnv.reason}\n`);
  let done = 0;
  let agreed = 0;
  let other = 0;
  let undecided = 0;
  let result: CampaignResult;
  try {
    result = runCampaign(
      lab,
      {
        seed: args.seed,
        runs: args.runs,
        profiles: args.profiles,
        shrink: args.shrink,
        ...(args.replay === undefined ? {} : { replay: args.replay }),
        onCase: (index: number, checked: Checked) => {
          done++;
          if (checked.verdict.kind === 'agree') agreed++;
          else if (checked.verdict.kind === 'undecided') undecided++;
          else other++;
          if (checked.verdict.kind === 'new') process.stdout.write(`  case ${index}: NEW disagreement (printed below once shrunk)\n`);
          if (done % 25 === 0 || args.replay !== undefined) process.stdout.write(`  [${done}/${args.replay === undefined ? args.runs : 1}] agreed ${agreed}, disagreed ${other}${undecided === 0 ? '' : `, undecided ${undecided}`}\n`);
        },
      },
      legacy,
    );
  } finally {
    lab.destroy();
    legacy?.destroy();
  }
  for (const d of result.disagreements) {
    const v = d.checked.verdict;
    const label = v.kind === 'known' ? `known: ${v.known.id}${v.confirmed ? ` (${confirmation(v.known)})` : ''}` : 'NEW';
    process.stdout.write(`\n[${label}] case ${d.index}\n${formatDisagreement(d.case, d.checked.result, replayCommand(args, d.index))}\n`);
    if (d.shrunk !== undefined) process.stdout.write(`\nshrunk to:\n${formatDisagreement(d.shrunk.case, d.shrunk.checked.result, `(shrunk from case ${d.index})`)}\n`);
  }
  process.stdout.write(`${summary(args, result, tool, legacy !== undefined)}\n`);
  process.exitCode = result.disagreements.some((d) => d.checked.verdict.kind === 'new') ? 1 : 0;
}

main();
