/**
 * flannel's `iptables-restore` wrapper (`iptables_restore.go`): a transaction per table built
 * from rule specs, the word after `--comment` quoted, applied with `--noflush`.
 */
import type { IptablesHandle } from '@netsim/sim';

/** Table → lines of words (`-A CHAIN …`, `-D CHAIN …`), in order. */
export type RestoreRules = Map<string, string[][]>;

/** The restore input: `*table`, the lines, `COMMIT`, per table. */
export function buildRestorePayload(rules: RestoreRules): string {
  let out = '';
  for (const [table, lines] of rules) {
    out += `*${table}\n`;
    for (const words of lines) out += `${words.map((w, i) => (i > 0 && words[i - 1] === '--comment' ? `"${w}"` : w)).join(' ')}\n`;
    out += 'COMMIT\n';
  }
  return out;
}

/** `ApplyWithoutFlush`: one `iptables-restore --noflush` of the transaction. */
export async function applyWithoutFlush(ipt: IptablesHandle, rules: RestoreRules): Promise<void> {
  await ipt.restore(buildRestorePayload(rules), { noflush: true });
}
