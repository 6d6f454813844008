/**
 * @internal `-m time` (libxt_time): times printed `HH:MM:SS` (both when either differs from the
 * whole day), days in calendar order, `!` applied to the day lists (a complement, as the tool
 * stores them), dates printed `YYYY-MM-DDThh:mm:ss` with `--datestop` always printed (default
 * 2038-01-19T03:14:07), `--kerneltz` and `--contiguous` last; `--utc` is the default and not printed.
 */
import { paramProblem } from '../failure.ts';
import { argOf, strtoumax, type XtDefinition } from './define.ts';

/** libxt_time's suffix: by the last digit alone (it prints 11st, 12nd, 13rd). */
function ordinal(d: string): string {
  const last = d[d.length - 1];
  return last === '1' ? 'st' : last === '2' ? 'nd' : last === '3' ? 'rd' : 'th';
}

const DAYS: readonly string[] = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];
const DATE_MAX = 0x7fffffff;

/** strtoul(text + from, &end, base) for base 10 or 0: the value (saturated) and where it stopped. */
function strtoul(text: string, from: number, base: 10 | 0): { value: number; end: number } {
  if (base === 0) {
    const r = strtoumax(text, from);
    if (r === undefined) {
      // strtoul itself reads a leading minus (xtables' wrapper refuses it): a huge value.
      const neg = /^[ \t\n\v\f\r]*-/.exec(text.slice(from));
      const rr = neg === null ? undefined : strtoumax(text, from + neg[0].length);
      return rr === undefined ? { value: 0, end: from } : { value: rr.value === 0n ? 0 : Number.MAX_SAFE_INTEGER, end: rr.end };
    }
    return { value: r.value > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(r.value), end: r.end };
  }
  const m = /^[ \t\n\v\f\r]*([+-]?)([0-9]+)/.exec(text.slice(from));
  if (m === null) return { value: 0, end: from };
  const n = Number(m[2]);
  return { value: m[1] === '-' && n !== 0 ? Number.MAX_SAFE_INTEGER : Math.min(n, Number.MAX_SAFE_INTEGER), end: from + m[0].length };
}

/** time_parse_minutes: `hh:mm[:ss]`; the message quotes the text from the field that failed. */
function seconds(text: string, at: number): number {
  const bad = (from: number): never => {
    throw paramProblem(`invalid time "${text.slice(from)}" specified, should be hh:mm[:ss] format and within the boundaries`, at);
  };
  const h = strtoul(text, 0, 10);
  if (text[h.end] !== ':' || h.value > 23) bad(0);
  const m = strtoul(text, h.end + 1, 10);
  if ((m.end < text.length && text[m.end] !== ':') || m.value > 59) bad(h.end + 1);
  if (m.end >= text.length) return h.value * 3600 + m.value * 60;
  const sec = strtoul(text, m.end + 1, 10);
  if (sec.end !== text.length || sec.value > 59) bad(m.end + 1);
  return h.value * 3600 + m.value * 60 + sec.value;
}

/** The comma-separated words of a day list, each cut to `max` characters (my_strseg). */
function segments(text: string, max: number): string[] {
  if (text === '') return [];
  const parts = text.split(',');
  if (parts[parts.length - 1] === '') parts.pop();
  return parts.map((p) => p.slice(0, max));
}

/** time_parse_weekdays: numbers (1 = Monday) or names by their first two letters; a bit mask. */
function weekdays(text: string, at: number): number {
  let mask = 0;
  for (const day of segments(text, 3)) {
    const n = strtoul(day, 0, 0);
    if (n.end === day.length) {
      if (n.value === 0) throw paramProblem('No, the week does NOT begin with Sunday.', at);
      if (n.value < 32) mask |= 1 << n.value;
      continue;
    }
    let valid = false;
    DAYS.forEach((d, k) => {
      if (day.slice(0, 2) === d.slice(0, 2)) {
        mask |= 1 << (k + 1);
        valid = true;
      }
    });
    if (!valid) throw paramProblem(`${day} is not a valid day specifier`, at);
  }
  return mask >>> 0;
}

/** time_parse_monthdays: numbers 0-31 (base 0); a bit mask. */
function monthdays(text: string, at: number): number {
  let mask = 0;
  for (const day of segments(text, 2)) {
    const n = strtoul(day, 0, 0);
    if (n.end !== day.length || n.value > 31) throw paramProblem(`${day} is not a valid day for --monthdays`, at);
    mask |= 1 << n.value;
  }
  return mask >>> 0;
}

function hms(n: number): string {
  const p = (x: number): string => String(x).padStart(2, '0');
  return `${p(Math.floor(n / 3600))}:${p(Math.floor(n / 60) % 60)}:${p(n % 60)}`;
}

/** time_parse_date: `YYYY[-MM[-DD[Thh[:mm[:ss]]]]]`, the year 1970-2038. */
function date(text: string, at: number): number {
  const bad = (): never => {
    throw paramProblem(`Invalid date "${text}" specified. Should be YYYY[-MM[-DD[Thh[:mm[:ss]]]]]`, at);
  };
  const fields = [1970, 1, 1, 0, 0, 0];
  const seps = ['-', '-', 'T', ':', ':', ''];
  const limits = [2038, 12, 31, 23, 59, 59];
  let from = 0;
  for (let k = 0; k < 6; k++) {
    const r = strtoul(text, from, 10);
    const next = text[r.end];
    if ((next !== undefined && next !== seps[k]) || (k === 5 && next !== undefined) || r.value > (limits[k] as number) || (k === 0 && r.value < 1970)) bad();
    fields[k] = r.value;
    if (next === undefined) break;
    from = r.end + 1;
  }
  const [y, mo, d, h, mi, se] = fields as [number, number, number, number, number, number];
  return daysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
}

/** Days since 1970-01-01 of a proleptic Gregorian date (month and day may overflow, as mktime lets them). */
function daysFromCivil(y0: number, m: number, d: number): number {
  const y = m <= 2 ? y0 - 1 : y0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

function dateText(secs: number): string {
  const days = Math.floor(secs / 86400);
  const rest = secs - days * 86400;
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  const y = yoe + era * 400 + (m <= 2 ? 1 : 0);
  const p = (x: number): string => String(x).padStart(2, '0');
  return `${y}-${p(m)}-${p(d)}T${hms(rest)}`;
}

export const TIME: XtDefinition = {
  name: 'time',
  options: [
    { name: 'datestart', args: 1, parse: (v, at) => [String(date(v[0] ?? '', at))] },
    { name: 'datestop', args: 1, parse: (v, at) => [String(date(v[0] ?? '', at))] },
    { name: 'timestart', args: 1, parse: (v, at) => [String(seconds(v[0] ?? '', at))] },
    { name: 'timestop', args: 1, parse: (v, at) => [String(seconds(v[0] ?? '', at))] },
    { name: 'contiguous', args: 0 },
    { name: 'weekdays', args: 1, invert: true, parse: (v, at) => [String(weekdays(v[0] ?? '', at))] },
    { name: 'monthdays', args: 1, invert: true, parse: (v, at) => [String(monthdays(v[0] ?? '', at))] },
    {
      name: 'localtz',
      args: 0,
      excl: ['utc'],
      parse: (_v, _at, _s, env) => {
        env.warn('WARNING: --localtz is being replaced by --kerneltz, since "local" is ambiguous. Note the kernel timezone has caveats - see manpage for details.\n');
        return [];
      },
    },
    { name: 'utc', args: 0, excl: ['localtz', 'kerneltz'] },
    { name: 'kerneltz', args: 0, excl: ['utc'] },
  ],
  order: ['timestart', 'timestop', 'monthdays', 'weekdays', 'datestart', 'datestop', 'kerneltz', 'contiguous'],
  finish(s) {
    const start = Number(s.value('timestart') ?? 0);
    const stop = Number(s.value('timestop') ?? 86399);
    if (s.has('contiguous') && start <= stop) throw paramProblem('time: --contiguous only makes sense when stoptime is smaller than starttime');
    if (start !== 0 || stop !== 86399) {
      s.set('timestart', [hms(start)]);
      s.set('timestop', [hms(stop)]);
    } else {
      s.delete('timestart');
      s.delete('timestop');
    }
    // The day lists as bit masks (bit 1 = Monday / the 1st), `!` their complement.
    const days = s.get('weekdays');
    if (days !== undefined) {
      const mask = (days.invert ? Number(days.values[0]) ^ 0xfe : Number(days.values[0])) >>> 0;
      if (mask === 0xfe) s.delete('weekdays');
      else s.set('weekdays', [DAYS.filter((_, k) => (mask & (1 << (k + 1))) !== 0).join(',')]);
    }
    const mdays = s.get('monthdays');
    if (mdays !== undefined) {
      const mask = (mdays.invert ? Number(mdays.values[0]) ^ 0xfffffffe : Number(mdays.values[0])) >>> 0;
      const chosen: number[] = [];
      for (let n = 1; n <= 31; n++) if ((mask & (1 << n)) !== 0) chosen.push(n);
      if (mask === 0xfffffffe) s.delete('monthdays');
      else s.set('monthdays', [chosen.join(',')]);
    }
    const ds = Number(s.value('datestart') ?? 0);
    if (ds !== 0) s.set('datestart', [dateText(ds)]);
    else s.delete('datestart');
    s.set('datestop', [dateText(Number(s.value('datestop') ?? DATE_MAX))]);
    s.delete('utc');
    if (s.has('localtz')) {
      s.delete('localtz');
      s.set('kerneltz', []);
    }
  },
  list(args) {
    let t = 'TIME';
    const start = argOf(args, 'timestart');
    if (start !== undefined) t += ` from ${start.value} to ${argOf(args, 'timestop')?.value ?? ''}`;
    const md = argOf(args, 'monthdays');
    if (md !== undefined) t += ` on ${md.value.split(',').map((d) => `${d}${ordinal(d)}`).join(',')}`;
    const wd = argOf(args, 'weekdays');
    if (wd !== undefined) t += ` on ${wd.value}`;
    const ds = argOf(args, 'datestart');
    if (ds !== undefined) t += ` starting from ${ds.value.replace('T', ' ')}`;
    const de = argOf(args, 'datestop');
    if (de !== undefined && de.value !== dateText(DATE_MAX)) t += ` until date ${de.value.replace('T', ' ')}`;
    if (!args.includes('--kerneltz')) t += ' UTC';
    if (args.includes('--contiguous')) t += ' contiguous';
    return t;
  },
};
