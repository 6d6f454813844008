/**
 * `pnpm conformance:nft-packets [--runs N] [--seed S] [--replay I]`: a campaign of generated nftables
 * rulesets and packets through the real kernel (loaded with the real `nft -f`) against
 * `@netsim/kernel` holding the same ruleset (see `nftPacket.ts`), with progress, a summary and
 * every disagreement printed with what replays it. Exit status: 0 when there is none, 1 when one
 * was found, 2 when the machine cannot run it (the line says why).
 */
import { release } from 'node:os';
import { checkEnvironment } from './environment.ts';
import { run, which } from './exec.ts';
import { Lab } from './lab.ts';
import { formatNftDisagreement, runNftPacketCampaign } from './nftPacket.ts';
import { defaultCampaignSeed } from './seed.ts';

const USAGE = 'usage: pnpm conformance:nft-packets [--runs N] [--seed S] [--replay I]';

function fail(msg: string): never {
  process.stderr.write(`conformance:nft-packets: ${msg}\n${USAGE}\n`);
  process.exit(2);
}

function intArg(name: string, v: string | undefined): number {
  if (v === undefined || !/^[0-9]+$/.test(v)) fail(`${name} takes a non-negative integer, got "${v ?? ''}"`);
  return Number(v);
}

function main(): void {
  const argv = process.argv.slice(2);
  let runs = 500;
  let seed = defaultCampaignSeed();
  let replay: number | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--runs') runs = intArg('--runs', argv[++i]);
    else if (a === '--seed') seed = intArg('--seed', argv[++i]);
    else if (a === '--replay') replay = intArg('--replay', argv[++i]);
    else fail(`unknown argument "${a ?? ''}"`);
  }
  const env = checkEnvironment();
  if (!env.ok) {
    process.stderr.write(`conformance:nft-packets: cannot run here: ${env.reason}\n`);
    process.exit(2);
  }
  if (which('nft') === undefined) {
    process.stderr.write('conformance:nft-packets: cannot run here: missing nft (Debian: apt-get install nftables)\n');
    process.exit(2);
  }
  const version = run('nft', ['--version']).trim();
  process.stdout.write(`conformance:nft-packets: seed ${seed}, ${replay === undefined ? `${runs} cases` : `replaying case ${replay}`}, ${version}, kernel ${release()}\n`);
  const lab = Lab.create({ pinConntrack: false });
  const total = replay === undefined ? runs : 1;
  let done = 0;
  let agreed = 0;
  let other = 0;
  try {
    const r = runNftPacketCampaign(lab, {
      seed,
      runs,
      ...(replay === undefined ? {} : { replay }),
      onCase: (_i, v) => {
        done++;
        if (v.kind === 'agree') agreed++;
        else other++;
        if (done % 25 === 0 || done === total) process.stdout.write(`  nft [${done}/${total}] agreed ${agreed}, other ${other}\n`);
      },
    });
    for (const d of r.disagreements) process.stdout.write(`\n[NEW] nft case ${d.index}\n${formatNftDisagreement(d.case, d.result, `pnpm conformance:nft-packets --seed ${seed} --replay ${d.index}`)}\n`);
    process.stdout.write(
      [
        '',
        `conformance:nft-packets summary: seed ${seed}, ${version}, kernel ${release()}`,
        `  cases run: ${r.runs}`,
        `  agreed:    ${r.agreed} (${r.refused} of them rulesets both nft and netsim refuse)`,
        `  undecided: ${r.undecided.length}${r.undecided.length === 0 ? '' : ` (${[...new Set(r.undecided.map((u) => u.reason))].join('; ')})`}`,
        `  disagreements: ${r.disagreements.length}${r.disagreements.length === 0 ? '' : ` (cases ${r.disagreements.map((d) => d.index).join(', ')})`}`,
        '',
      ].join('\n'),
    );
    process.exitCode = r.disagreements.length > 0 ? 1 : 0;
  } finally {
    lab.destroy();
  }
}

main();
