/**
 * `pnpm conformance [--runs N] [--seed S] [--part netfilter|host|format|options|all] [--replay I] …`:
 * a long differential campaign against the real kernel in four parts — netfilter level (the
 * evaluator through the lab's hooks), whole host (`@netsim/kernel`), format (formatSave through
 * the real iptables-restore/save), options (every extension's options as users write them,
 * through both tools' iptables-restore) — with progress, a summary and every disagreement printed with
 * what replays it. Exit status: 0 when every disagreement is a known one, 1 when a new one was
 * found, 2 when the machine cannot run the campaign (the line says why).
 */
import { release } from 'node:os';
import { runCampaign, type CampaignResult, type Checked } from './campaign.ts';
import { checkEnvironment, checkLegacy } from './environment.ts';
import { PROFILES, type Profile } from './generate.ts';
import type { KnownDisagreement } from './known.ts';
import { Lab } from './lab.ts';
import { formatDisagreement } from './runner.ts';
import { runFormatCampaign, type FormatCampaignResult } from './formatCheck.ts';
import { runOptionsCampaign, type OptionsCampaignResult } from './optionsCheck.ts';
import { formatHostDisagreement, runHostCampaign, type HostCampaignResult } from './wholeHost.ts';
import { defaultCampaignSeed } from './seed.ts';

type Part = 'netfilter' | 'host' | 'format' | 'options';
const PARTS: readonly Part[] = ['netfilter', 'host', 'format', 'options'];

interface Args {
  readonly runs: number;
  readonly seed: number;
  readonly replay?: number;
  readonly profiles: readonly Profile[];
  readonly shrink: boolean;
  readonly legacy: boolean;
  readonly parts: readonly Part[];
}

const USAGE = 'usage: pnpm conformance [--runs N] [--seed S] [--part netfilter|host|format|options|all] [--replay I] [--profiles forward,reject,local] [--no-shrink] [--no-legacy]';

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
  let seed = defaultCampaignSeed();
  let replay: number | undefined;
  let profiles: readonly Profile[] = PROFILES;
  let shrink = true;
  let legacy = true;
  let parts: readonly Part[] = PARTS;
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
      case '--part': {
        const v = value() ?? '';
        if (v === 'all') parts = PARTS;
        else if ((PARTS as readonly string[]).includes(v)) parts = [v as Part];
        else fail(`--part takes netfilter, host, format, options or all, got "${v}"`);
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
  if (replay !== undefined && parts.length !== 1) fail('--replay needs --part netfilter, host, format or options (a case index belongs to one part)');
  return { runs, seed, ...(replay === undefined ? {} : { replay }), profiles, shrink, legacy, parts };
}

function replayCommand(args: Args, part: Part, index: number): string {
  const profiles = args.profiles.length === PROFILES.length ? '' : ` --profiles ${args.profiles.join(',')}`;
  return `pnpm conformance --seed ${args.seed} --part ${part} --replay ${index}${profiles}`;
}

function confirmation(k: KnownDisagreement): string {
  return k.legacyAgrees ? 'iptables-legacy agrees with netsim' : 'iptables-legacy agrees with the kernel via iptables-nft';
}

function netfilterSummary(args: Args, r: CampaignResult, legacyUsed: boolean): string {
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
    `netfilter level (evaluator through the lab's hooks), profiles ${args.profiles.join(',')}:`,
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

function hostSummary(r: HostCampaignResult): string {
  const known = new Map<string, number[]>();
  const fresh: number[] = [];
  let unconfirmed = 0;
  for (const d of r.disagreements) {
    if (d.verdict.kind === 'known') {
      for (const i of d.verdict.issues) known.set(i.id, [...(known.get(i.id) ?? []), d.index]);
      if (!d.verdict.confirmed) unconfirmed++;
    } else fresh.push(d.index);
  }
  return [
    'whole host (@netsim/kernel against the lab node):',
    `  cases run: ${r.runs}`,
    `  agreed:    ${r.agreed}`,
    `  undecided: ${r.undecided.length}${r.undecided.length === 0 ? '' : ` (netsim: ${[...new Set(r.undecided.map((u) => u.reason.replace(/\d+\.\d+\.\d+\.\d+/g, 'ADDR')))].join('; ')})`}`,
    `  known disagreements: ${r.disagreements.length - fresh.length}${r.disagreements.length === fresh.length ? '' : unconfirmed === 0 ? ' (all confirmed: iptables-legacy agrees with netsim)' : ` (${unconfirmed} by pattern only, not confirmed on iptables-legacy)`}`,
    ...[...known].sort(([a], [b]) => a.localeCompare(b)).map(([id, cases]) => `    ${id} ×${cases.length}; cases ${cases.join(', ')}`),
    `  NEW disagreements: ${fresh.length}${fresh.length === 0 ? '' : ` (cases ${fresh.join(', ')})`}`,
  ].join('\n');
}

function formatSummary(r: FormatCampaignResult): string {
  return [
    'format (formatSave through the real iptables-restore and iptables-save):',
    `  rulesets: ${r.runs}`,
    `  identical with no known issue involved: ${r.identical}`,
    `  known issues: ${[...r.known].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k} ×${v}`).join(', ') || 'none'}`,
    `  NEW differences: ${r.unexplained.length}${r.unexplained.length === 0 ? '' : ` (rulesets ${r.unexplained.map((u) => u.index).join(', ')})`}`,
  ].join('\n');
}

function optionsSummary(r: OptionsCampaignResult): string {
  const known = r.disagreements.filter((d) => d.known !== undefined);
  const fresh = r.disagreements.filter((d) => d.known === undefined);
  return [
    "options (every extension's options, as users write them, through the real iptables-restore and iptables-save):",
    `  rules: ${r.runs} (${r.accepted} accepted and ${r.refused} refused by the real tool; ${r.perExtension.size} extensions drawn)`,
    `  agreed on exit status, error text and saved text: ${r.agreed}`,
    `  known differences: ${known.length}${[...new Set(known.map((d) => d.known?.id))].map((id) => ` ${id} ×${known.filter((d) => d.known?.id === id).length}`).join(',')}`,
    `  NEW disagreements: ${fresh.length}${fresh.length === 0 ? '' : ` (rules ${fresh.map((d) => d.index).join(', ')})`}`,
  ].join('\n');
}

function progress(label: string, done: number, total: number, agreed: number, other: number, undecided: number, force: boolean): void {
  if (done % 25 === 0 || done === total || force) process.stdout.write(`  ${label} [${done}/${total}] agreed ${agreed}, disagreed ${other}${undecided === 0 ? '' : `, undecided ${undecided}`}\n`);
}

function main(): void {
  const args = parseArgs(process.argv.slice(2));
  const env = checkEnvironment();
  if (!env.ok) {
    process.stderr.write(`conformance: cannot run here: ${env.reason}\n`);
    process.exit(2);
  }
  const legacyEnv = args.legacy && (args.parts.includes('netfilter') || args.parts.includes('host')) ? checkLegacy() : { ok: false as const, reason: args.legacy ? 'not needed' : 'disabled by --no-legacy' };
  const lab = Lab.create();
  const legacy = legacyEnv.ok && args.parts.includes('netfilter') ? Lab.create({ backend: 'legacy' }) : undefined;
  const tool = lab.toolVersion();
  const total = args.replay === undefined ? args.runs : 1;
  process.stdout.write(`conformance: seed ${args.seed}, ${args.replay === undefined ? `${args.runs} cases per part` : `replaying case ${args.replay}`} (${args.parts.join(', ')}), ${tool}, kernel ${release()}\n`);
  if (args.parts.includes('netfilter') && legacy === undefined) process.stdout.write(`conformance: known disagreements not confirmed on iptables-legacy: ${legacyEnv.ok ? '' : legacyEnv.reason}\n`);
  const summaries: string[] = [];
  let fresh = false;
  let hostLab: Lab | undefined;
  let hostLegacy: Lab | undefined;
  try {
    if (args.parts.includes('netfilter')) {
      let done = 0;
      let agreed = 0;
      let other = 0;
      let undecided = 0;
      const result = runCampaign(
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
            if (checked.verdict.kind === 'new') process.stdout.write(`  netfilter case ${index}: NEW disagreement (printed below once shrunk)\n`);
            progress('netfilter', done, total, agreed, other, undecided, args.replay !== undefined);
          },
        },
        legacy,
      );
      for (const d of result.disagreements) {
        const v = d.checked.verdict;
        const label = v.kind === 'known' ? `known: ${v.known.id}${v.confirmed ? ` (${confirmation(v.known)})` : ''}` : 'NEW';
        process.stdout.write(`\n[${label}] netfilter case ${d.index}\n${formatDisagreement(d.case, d.checked.result, replayCommand(args, 'netfilter', d.index))}\n`);
        if (d.shrunk !== undefined) process.stdout.write(`\nshrunk to:\n${formatDisagreement(d.shrunk.case, d.shrunk.checked.result, `(shrunk from case ${d.index})`)}\n`);
      }
      fresh ||= result.disagreements.some((d) => d.checked.verdict.kind === 'new');
      summaries.push(netfilterSummary(args, result, legacy !== undefined));
    }
    if (args.parts.includes('host')) {
      // Conntrack not pinned: when the kernel tracks at all is part of what is compared.
      hostLab = Lab.create({ pinConntrack: false });
      if (legacyEnv.ok) hostLegacy = Lab.create({ backend: 'legacy', pinConntrack: false });
      else process.stdout.write(`conformance: known host disagreements not confirmed on iptables-legacy: ${legacyEnv.reason}\n`);
      let done = 0;
      let agreed = 0;
      let other = 0;
      let undecided = 0;
      const result = runHostCampaign(hostLab, {
        seed: args.seed,
        runs: args.runs,
        profiles: args.profiles,
        ...(args.replay === undefined ? {} : { replay: args.replay }),
        ...(hostLegacy === undefined ? {} : { legacy: hostLegacy }),
        onCase: (_index, v) => {
          done++;
          if (v.kind === 'agree') agreed++;
          else if (v.kind === 'undecided') undecided++;
          else other++;
          progress('host', done, total, agreed, other, undecided, args.replay !== undefined);
        },
      });
      for (const d of result.disagreements) {
        const label = d.verdict.kind === 'known' ? `known: ${d.verdict.issues.map((i) => i.id).join(', ')}${d.verdict.confirmed ? ' (confirmed: iptables-legacy agrees with netsim)' : ''}` : 'NEW';
        process.stdout.write(`\n[${label}] host case ${d.index}\n${formatHostDisagreement(d.case, d.result, replayCommand(args, 'host', d.index))}\n`);
      }
      fresh ||= result.disagreements.some((d) => d.verdict.kind === 'new');
      summaries.push(hostSummary(result));
    }
  } finally {
    lab.destroy();
    legacy?.destroy();
    hostLab?.destroy();
    hostLegacy?.destroy();
  }
  if (args.parts.includes('format')) {
    let done = 0;
    let clean = 0;
    const runs = args.replay === undefined ? args.runs : 1;
    const result = runFormatCampaign({
      seed: args.seed,
      runs: args.runs,
      ...(args.replay === undefined ? {} : { replay: args.replay }),
      onCase: (_index, c) => {
        done++;
        if (c.unexplained.length === 0) clean++;
        progress('format', done, runs, clean, done - clean, 0, args.replay !== undefined);
      },
    });
    for (const u of result.unexplained) process.stdout.write(`\n[NEW] format ruleset ${u.index} (${replayCommand(args, 'format', u.index)})\n${u.lines.map((l) => `  - ${l}`).join('\n')}\n`);
    fresh ||= result.unexplained.length > 0;
    summaries.push(formatSummary(result));
  }
  if (args.parts.includes('options')) {
    let done = 0;
    let agreed = 0;
    const runs = args.replay === undefined ? args.runs : 1;
    const result = runOptionsCampaign({
      seed: args.seed,
      runs: args.runs,
      ...(args.replay === undefined ? {} : { replay: args.replay }),
      onCase: (_index, r) => {
        done++;
        if (r.diffs.length === 0) agreed++;
        progress('options', done, runs, agreed, done - agreed, 0, args.replay !== undefined);
      },
    });
    for (const d of result.disagreements) {
      process.stdout.write(`\n[${d.known === undefined ? 'NEW' : `known: ${d.known.id}`}] options rule ${d.index} (${replayCommand(args, 'options', d.index)})\n  *${d.case.table}: ${d.case.rule}\n${d.diffs.map((l) => `  - ${l}`).join('\n')}\n`);
    }
    fresh ||= result.disagreements.some((d) => d.known === undefined);
    summaries.push(optionsSummary(result));
  }
  process.stdout.write(`\nconformance summary: seed ${args.seed}, ${tool}, kernel ${release()}\n${summaries.join('\n')}\n`);
  process.exitCode = fresh ? 1 : 0;
}

main();
