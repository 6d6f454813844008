/**
 * @internal
 * What a target is compiled into for the walk: an opcode and its operands. Each target module
 * fills its own (`TargetModule.code`); the walk in `evaluate.ts` runs the opcodes.
 */
import type { NatRequest, Verdict } from './evalTypes.ts';

/** Target opcodes. */
export const T_NONE = 0;
export const T_ACCEPT = 1;
export const T_DROP = 2;
export const T_REJECT = 3;
export const T_RETURN = 4;
export const T_JUMP = 5;
export const T_GOTO = 6;
export const T_NAT = 7;
export const T_MARK = 8;
export const T_CONNMARK_SET = 9;
export const T_CONNMARK_SAVE = 10;
export const T_CONNMARK_RESTORE = 11;
export const T_CONTINUE = 12;
export const T_NOTRACK = 13;
export const T_TRACE = 14;
export const T_UNKNOWN = 15;

export const ACCEPT_VERDICT: Verdict = { kind: 'ACCEPT' };
export const DROP_VERDICT: Verdict = { kind: 'DROP', byPolicy: false };

/** A target's opcode and operands. */
export interface TargetCode {
  op: number;
  value: number;
  mask: number;
  nfmask: number;
  ctmask: number;
  targetName: string;
  verdict: Verdict | null;
  nat: NatRequest | null;
  unknownTarget: string;
}

export function emptyTargetCode(): TargetCode {
  return { op: T_NONE, value: 0, mask: 0, nfmask: 0, ctmask: 0, targetName: '', verdict: null, nat: null, unknownTarget: '' };
}
