import { describe, expect, it } from 'vitest';
import { rulesetNeedsConntrack } from '../src/conntrackNeed.ts';
import { append, emptyRuleset, M, rule, T } from './rules.ts';

describe('when conntrack runs', () => {
  it('should follow what was observed on 6.18: plain filter and raw rules do not turn it on, nat rules, ct matches and CONNMARK do', () => {
    const base = emptyRuleset();
    expect(rulesetNeedsConntrack(base)).toBe(false);
    expect(rulesetNeedsConntrack(append(base, 'filter', 'FORWARD', rule({}, T.accept)))).toBe(false);
    expect(rulesetNeedsConntrack(append(base, 'raw', 'PREROUTING', rule({}, T.accept)))).toBe(false);
    expect(rulesetNeedsConntrack(append(base, 'nat', 'POSTROUTING', rule({ o: 'n9' }, T.masq())))).toBe(true);
    expect(rulesetNeedsConntrack(append(base, 'filter', 'FORWARD', rule({ m: [M.ctstate('INVALID')] }, T.drop)))).toBe(true);
    expect(rulesetNeedsConntrack(append(base, 'mangle', 'PREROUTING', rule({}, T.connmarkRestore)))).toBe(true);
  });
});
