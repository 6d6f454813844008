/**
 * The mutation suite as a benchmark: for every one-bug variant of the fixed reference
 * controllers, whether the default campaign of `netsim fuzz` catches it, at which run, and how
 * long the campaign took (stopping at the first counterexample); then the fixed references'
 * campaigns, which must find nothing. `pnpm bench mutants`.
 */
import { MUTANTS } from '../../controllers/mutants/index.ts';
import { defaultCampaign } from '../test/mutants/suite.ts';

const rows: string[] = [];
let caught = 0;
const started = Date.now();
for (const m of MUTANTS) {
  const r = await defaultCampaign(m.name);
  if (r.caught) caught++;
  rows.push(`${m.name.padEnd(44)} ${(r.caught ? `caught at run ${r.atRun ?? 0}` : 'MISSED').padEnd(20)} ${`${(r.ms / 1000).toFixed(2)}s`.padStart(7)}  ${m.issue}`);
}
for (const fixed of ['npl:fixed', 'flannel:fixed', 'kube-proxy:fixed']) {
  const r = await defaultCampaign(fixed);
  rows.push(`${fixed.padEnd(44)} ${(r.caught ? `FALSE ALARM at run ${r.atRun ?? 0}` : 'silent').padEnd(20)} ${`${(r.ms / 1000).toFixed(2)}s`.padStart(7)}  (reference)`);
}
console.log(rows.join('\n'));
console.log(`\n${caught} of ${MUTANTS.length} variants caught by the default campaign in ${((Date.now() - started) / 1000).toFixed(1)}s`);
