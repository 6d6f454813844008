/**
 * `pnpm conformance:nft [--runs N] [--seed S] [--show K]`: the nft format campaign against the
 * real nft in a throwaway network namespace. Prints a summary and every new disagreement (the
 * files and both outputs, line by line). Exit status: 0 when every disagreement is a known one,
 * 1 when a new one was found, 2 when the machine cannot run it (the line says why).
 */
import { checkEnvironment } from './environment.ts';
import { knownNftDifference, runNftFormatCampaign } from './nftFormat.ts';
import { formatNftDifference, nftRelease } from './nftLive.ts';
import { defaultCampaignSeed } from './seed.ts';

const USAGE = 'usage: pnpm conformance:nft [--runs N] [--seed S] [--show K]';

function fail(message: string): never {
  process.stderr.write(`conformance:nft: ${message}\n${USAGE}\n`);
  process.exit(2);
}

function main(): never {
  let runs = 300;
  // The default seed is the one wall-clock read: printed first, every case derives from it.
  let seed = defaultCampaignSeed();
  let show = 5;
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const v = argv[i + 1];
    if (flag !== '--runs' && flag !== '--seed' && flag !== '--show') fail(`unknown argument ${flag ?? ''}`);
    if (v === undefined || !/^\d+$/.test(v)) fail(`${flag} needs a non-negative integer`);
    i++;
    if (flag === '--runs') runs = Number(v);
    else if (flag === '--seed') seed = Number(v);
    else show = Number(v);
  }
  const env = checkEnvironment();
  if (!env.ok) fail(`cannot run: ${env.reason}`);
  const release = nftRelease();
  if (release === undefined) fail('cannot run: nft is not installed (Debian: apt-get install nftables)');
  process.stdout.write(`nft format campaign: ${runs} cases from seed ${seed} against nft ${release}\n`);
  const r = runNftFormatCampaign({
    runs,
    seed,
    onCase: (_c, i) => {
      if ((i + 1) % 50 === 0) process.stdout.write(`  ${i + 1}/${runs}\n`);
    },
  });
  const known = r.disagreements.filter((d) => knownNftDifference(d) !== undefined);
  const fresh = r.disagreements.filter((d) => knownNftDifference(d) === undefined);
  process.stdout.write(`${r.runs} cases: ${r.applied} applied by nft, ${r.failed} refused; ${r.agreed} identical, ${known.length} known differences, ${fresh.length} new\n`);
  for (const d of fresh.slice(0, show)) {
    process.stdout.write(`\n=== case ${d.case.seed}${d.case.mutation !== undefined ? ` (${d.case.mutation})` : ''}: replay with --seed ${d.case.seed} --runs 1\n`);
    for (const f of d.case.files) process.stdout.write(`--- ${f.name}\n${f.text}`);
    for (const x of d.differences) process.stdout.write(formatNftDifference(x));
  }
  process.exit(fresh.length > 0 ? 1 : 0);
}

main();
