/**
 * @internal
 * The port part of the NAT targets' options as libxt_NAT's parse_ports reads it (`--to-ports` of
 * REDIRECT and MASQUERADE, the `:ports` of `--to-destination`/`--to-source`), with its messages.
 */
import type { ParseEnv } from '../extension.ts';
import { paramProblem } from '../failure.ts';
import { lookupService } from '../names.ts';
import { strtoumax } from './define.ts';

/** Protocols a NAT port range may go with (the rule's `-p`, `!` or not; icmp maps its id). */
const PORT_OK: ReadonlySet<number> = new Set([6, 17, 132, 33, 1]);

export interface NatPorts {
  readonly from: number;
  readonly to: number;
  /** The `/base` of a shifted port map, which only the NAT targets' final checks refuse. */
  readonly base?: number;
}

/** xtables_strtoui(text from `at`, &end, 0..65535): the number and where it stopped. */
function portNumber(text: string, at: number, min = 0): { value: number; end: number } | undefined {
  const r = strtoumax(text, at);
  if (r === undefined || r.value < BigInt(min) || r.value > 65535n) return undefined;
  return { value: Number(r.value), end: r.end };
}

/** getservbyname(name, NULL) on a stock /etc/services. */
function service(name: string): number | undefined {
  return lookupService(name, 6) ?? lookupService(name, 17);
}

/** parse_ports: `port`, `port-port` or `port-port/base`. */
export function natPorts(text: string, env: ParseEnv, argIndex: number): NatPorts {
  if (env.proto === undefined || !PORT_OK.has(env.proto)) throw paramProblem('Need TCP, UDP, SCTP or DCCP with port specification', argIndex);
  let from: number;
  let end: number;
  const first = portNumber(text, 0);
  if (first === undefined) {
    const s = service(text);
    if (s === undefined) throw paramProblem(`Port \`${text}' not valid`, argIndex);
    from = s;
    end = text.length;
  } else ({ value: from, end } = first);
  if (end === text.length) return { from, to: from };
  if (text[end] === ':') throw paramProblem('Invalid port:port syntax - use dash', argIndex);
  if (text[end] !== '-') throw paramProblem(`Garbage after port value: \`${text.slice(end)}'`, argIndex);
  const rest = text.slice(end + 1);
  const second = portNumber(text, end + 1);
  if (second === undefined) throw paramProblem(`Port \`${rest}' not valid`, argIndex);
  if (second.value < from) throw paramProblem(`Port range \`${rest}' funky`, argIndex);
  end = second.end;
  if (end === text.length) return { from, to: second.value };
  if (text[end] !== '/') throw paramProblem(`Garbage after port range: \`${text.slice(end)}'`, argIndex);
  const baseText = text.slice(end + 1);
  const b = portNumber(text, end + 1, 1);
  // The base port: a number read as far as it goes, else a service name.
  const base = b !== undefined ? b.value : service(baseText);
  if (base === undefined) throw paramProblem(`Port \`${baseText}' not valid`, argIndex);
  return { from, to: second.value, base };
}
