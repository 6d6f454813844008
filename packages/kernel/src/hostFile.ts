/**
 * The host file of `netsim trace --host FILE`: one host's interfaces, addresses, routes, rules,
 * sysctls, sockets and ruleset, as the commands that would build it, e.g.
 *
 * ```
 * hostname node-a
 * ip link add eth0 type physical
 * ip link set eth0 up
 * ip addr add 198.51.100.10/24 dev eth0
 * ip route add default via 198.51.100.254
 * sysctl -w net.ipv4.ip_forward=1
 * listen tcp 22
 * iptables-restore node-a.rules     # a file as iptables-save prints it, relative to this one
 * *nat                               # …or the iptables-save text inline
 * :PREROUTING ACCEPT [0:0]
 * -A PREROUTING -p tcp -m tcp --dport 30080 -j DNAT --to-destination 203.0.113.9:8080
 * COMMIT
 * nft -f node-a.nft                  # an nft ruleset file (one transaction), relative to this one
 * table inet filter {                # …or nft text inline: from `table`/`flush ruleset` to the closing brace
 *   chain input { type filter hook input priority 0; policy accept; }
 * }
 * ```
 *
 * nft files and inline blocks are applied in order, each one transaction as `nft -f` does, after
 * the interfaces exist (so `iifname` checks nothing at load, as in the kernel).
 *
 * Commands are those of {@link runHostCommand}. Errors name the file, line, column and token.
 */
import { emptyRuleset, isNetfilterError, parseSave, type Ruleset } from '@netsim/netfilter';
import { isNftError, tryNftApply, type Ruleset as NftRuleset } from '@netsim/nftables';
import { KernelError, isKernelError } from './errors.ts';
import { Host } from './host.ts';
import { runHostCommand, tokenize } from './ipCommand.ts';

/** Reads another file named by the host file (`iptables-restore FILE`), relative to it. */
export type ReadFile = (path: string) => string;

function located(file: string, lineNo: number, line: string, e: KernelError): KernelError {
  // Point at the offending token when the command named one, else at the start of the command.
  const words = [...line.matchAll(/\S+/g)];
  const wanted = e.token;
  const hit = (wanted !== undefined ? words.find((w) => w[0] === wanted) : undefined) ?? words[0];
  const token = hit?.[0] ?? '';
  const column = (hit?.index ?? 0) + 1;
  return new KernelError('parse', `${file}:${lineNo}:${column}: ${e.message}`, { location: { file, line: lineNo, column, token } });
}

/**
 * Builds a {@link Host} from host-file text. `readFile` resolves `iptables-restore FILE` lines;
 * without it such lines are an error.
 *
 * @example
 * const host = parseHostFile(readFileSync('node.host', 'utf8'), 'node.host', (p) => readFileSync(join(dir, p), 'utf8'));
 */
export function parseHostFile(text: string, file: string, readFile?: ReadFile): Host {
  const lines = text.split('\n');
  let name = file.replace(/^.*\//, '').replace(/\.[^.]*$/, '') || 'host';
  const first = lines.findIndex((l) => tokenize(l.replace(/#.*$/, ''))[0] !== undefined);
  const head = first < 0 ? [] : tokenize((lines[first] ?? '').replace(/#.*$/, ''));
  if (head[0] === 'hostname') {
    if (head[1] === undefined) throw new KernelError('parse', `${file}:${first + 1}:1: hostname needs a name`, { location: { file, line: first + 1, column: 1, token: 'hostname' } });
    name = head[1];
  }
  const host = new Host(name);
  // iptables-save sections keep their line numbers: the other lines are blanked for the parser.
  const saveLines: string[] = [];
  let inTable = false;
  let restoreFrom: { path: string; line: number } | null = null;
  // nft transactions in file order: inline blocks keep their line numbers (other lines blanked).
  const nftSteps: ({ kind: 'file'; path: string; line: number; column: number } | { kind: 'inline'; lines: string[] })[] = [];
  let nftDepth = 0;
  let nftBlock: string[] | null = null;
  lines.forEach((raw, i) => {
    const lineNo = i + 1;
    const trimmed = raw.trim();
    if (nftBlock !== null || (!inTable && /^(table|flush\s+ruleset)\b/.test(trimmed))) {
      saveLines.push('');
      if (nftBlock === null) {
        nftBlock = lines.map(() => '');
        nftSteps.push({ kind: 'inline', lines: nftBlock });
      }
      nftBlock[i] = raw;
      nftDepth += braceDelta(raw);
      if (nftDepth <= 0) {
        nftBlock = null;
        nftDepth = 0;
      }
      return;
    }
    if (inTable || trimmed.startsWith('*')) {
      saveLines.push(raw);
      if (trimmed.startsWith('*')) inTable = true;
      if (trimmed === 'COMMIT') inTable = false;
      return;
    }
    saveLines.push('');
    const line = raw.replace(/#.*$/, '');
    const t = tokenize(line);
    if (t.length === 0 || (i === first && t[0] === 'hostname')) return;
    if (t[0] === 'nft') {
      if (t[1] !== '-f' || t[2] === undefined) {
        const column = (line.indexOf(t[1] ?? 'nft') >= 0 ? line.indexOf(t[1] ?? 'nft') : 0) + 1;
        throw new KernelError('parse', `${file}:${lineNo}:${column}: nft here takes -f FILE (a ruleset file, relative to this one)`, { location: { file, line: lineNo, column, token: t[1] ?? 'nft' } });
      }
      nftSteps.push({ kind: 'file', path: t[2], line: lineNo, column: line.indexOf(t[2]) + 1 });
      return;
    }
    if (t[0] === 'iptables-restore') {
      if (t[1] === undefined) throw new KernelError('parse', `${file}:${lineNo}:1: iptables-restore needs a file`, { location: { file, line: lineNo, column: 1, token: 'iptables-restore' } });
      restoreFrom = { path: t[1], line: lineNo };
      return;
    }
    try {
      runHostCommand(host, line);
    } catch (e) {
      if (isKernelError(e)) throw located(file, lineNo, line, e);
      throw e;
    }
  });
  if (inTable) throw new KernelError('parse', `${file}:${lines.length}:1: table section without COMMIT`, { location: { file, line: lines.length, column: 1, token: '' } });
  let rs: Ruleset = emptyRuleset();
  const inline = saveLines.some((l) => l.trim() !== '');
  const from = restoreFrom as { path: string; line: number } | null;
  if (from !== null && inline) throw new KernelError('parse', `${file}:${from.line}:1: give the ruleset inline or with iptables-restore, not both`, { location: { file, line: from.line, column: 1, token: 'iptables-restore' } });
  try {
    if (from !== null) {
      if (readFile === undefined) throw new KernelError('parse', `${file}:${from.line}:1: cannot read ${from.path} here`, { location: { file, line: from.line, column: 1, token: from.path } });
      rs = parseSave(readFile(from.path), { file: from.path });
    } else if (inline) {
      rs = parseSave(saveLines.join('\n'), { file });
    }
  } catch (e) {
    if (isNetfilterError(e)) {
      const loc = e.location;
      throw new KernelError('parse', e.message, loc !== undefined ? { location: { file: loc.file ?? file, line: loc.line, column: loc.column, token: loc.token } } : {});
    }
    throw e;
  }
  host.setRuleset(rs);
  let nft: NftRuleset = host.nft;
  for (const step of nftSteps) {
    let text: string;
    let name: string;
    if (step.kind === 'file') {
      if (readFile === undefined) throw new KernelError('parse', `${file}:${step.line}:${step.column}: cannot read ${step.path} here`, { location: { file, line: step.line, column: step.column, token: step.path } });
      text = readFile(step.path);
      name = step.path;
    } else {
      text = step.lines.join('\n');
      name = file;
    }
    const r = tryNftApply(nft, text, { file: name });
    if (!r.ok) throw nftParseError(r.error);
    nft = r.ruleset;
  }
  host.setNft(nft);
  return host;
}

/** An nft error as a host-file error: the real tool's message (with its caret lines) and the location. */
function nftParseError(e: unknown): KernelError {
  if (!isNftError(e)) return new KernelError('parse', String(e));
  const loc = e.location;
  return new KernelError('parse', e.stderr.replace(/\n$/, ''), { location: { file: loc.file, line: loc.line, column: loc.column, token: loc.token } });
}

/** Opening minus closing braces on one nft line, outside quotes and comments. */
function braceDelta(line: string): number {
  let d = 0;
  let quoted = false;
  for (const ch of line) {
    if (ch === '"') quoted = !quoted;
    else if (!quoted && ch === '#') break;
    else if (!quoted && ch === '{') d++;
    else if (!quoted && ch === '}') d--;
  }
  return d;
}
