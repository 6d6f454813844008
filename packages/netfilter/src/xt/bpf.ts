/**
 * @internal `-m bpf --bytecode "N,code jt jf k,…"` (libxt_bpf): the program as `nfbpf_compile`
 * prints it, at most 64 instructions, the count checked against the instructions given; printed
 * back quoted, each instruction's numbers as read (`2, 6 0 0 1 ,6 0 0 0` prints `2,6 0 0 1,6 0 0 0`).
 */
import { paramProblem } from '../failure.ts';
import type { XtDefinition } from './define.ts';

const MAX_INSTRUCTIONS = 64;

function bytecode(v: readonly string[], at: number): readonly string[] {
  const text = v[0] ?? '';
  const parts = text.split(',');
  const m = /^\s*(\d+)/.exec(parts[0] ?? '');
  if (m === null) throw paramProblem('bpf: error parsing program length', at);
  const len = Number(m[1]);
  if (len > MAX_INSTRUCTIONS) throw paramProblem('bpf: number of instructions exceeds maximum', at);
  const code: string[] = [];
  for (const p of parts.slice(1)) {
    if (code.length >= len) throw paramProblem('bpf: real program length exceeds the encoded length parameter', at);
    const nums = /^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)/.exec(p);
    if (nums === null) throw paramProblem(`bpf: error at instr ${code.length}`, at);
    code.push(`${nums[1]} ${nums[2]} ${nums[3]} ${nums[4]}`);
  }
  if (code.length < len) throw paramProblem('bpf: parsed program length is less than the encoded length parameter', at);
  return [[String(len), ...code].join(',')];
}

export const BPF: XtDefinition = {
  name: 'bpf',
  options: [
    { name: 'bytecode', args: 1, parse: bytecode },
    { name: 'object-pinned', args: 1 },
  ],
  quoted: ['bytecode'],
  finish(s) {
    if (!s.has('bytecode') && !s.has('object-pinned')) throw paramProblem('bpf: one of --bytecode or --pinned is required');
  },
  // bpf_print_code ends the last instruction with its `tail` character, which is NUL when
  // listing: the real tool prints a NUL byte there. No blank before "match bpf" either.
  list: (args) => `match bpf ${(args[1] ?? '').slice((args[1] ?? '').indexOf(',') + 1)}\u0000`,
  listGlued: true,
};
