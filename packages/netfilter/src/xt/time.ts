/**
 * @internal `-m time` (libxt_time): times printed `HH:MM:SS` (both when either differs from the
 * whole day), days in calendar order, `!` applied to the day lists (a complement, as the tool
 * stores them), dates printed `YYYY-MM-DDThh:mm:ss` with `--datestop` always printed (default
 * 2038-01-19T03:14:07), `--kerneltz` and `--contiguous` last; `--utc` is the default and not printed.
 */
import { paramProblem } from '../failure.ts';
import { argOf, type XtDefinition } from './define.ts';

/** libxt_time's suffix: by the last digit alone (it prints 11st, 12nd, 13rd). */
function ordinal(d: string): string {
  const last = d[d.length - 1];
  return last === '1' ? 'st' : last === '2' ? 'nd' : last === '3' ? 'rd' : 'th';
}

const DAYS: readonly string[] = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];
const DATE_MAX = 0x7fffffff;

function seconds(text: string, at: number): number {
  const m = /^(\d{1,2}):(\d{1,2})(?::(\d{1,2}))?$/.exec(text);
  const h = Number(m?.[1]);
  const mi = Number(m?.[2]);
  const s = Number(m?.[3] ?? 0);
  if (m === null || h > 23 || mi > 59 || s > 59) throw paramProblem(`invalid time "${text}" specified, should be hh:mm[:ss] format and within the boundaries`, at);
  return h * 3600 + mi * 60 + s;
}

function hms(n: number): string {
  const p = (x: number): string => String(x).padStart(2, '0');
  return `${p(Math.floor(n / 3600))}:${p(Math.floor(n / 60) % 60)}:${p(n % 60)}`;
}

function date(text: string, at: number): number {
  const m = /^(\d{4})(?:-(\d{1,2})(?:-(\d{1,2})(?:T(\d{1,2})(?::(\d{1,2})(?::(\d{1,2}))?)?)?)?)?$/.exec(text);
  if (m === null) throw paramProblem(`Invalid date "${text}" specified. Should be YYYY[-MM[-DD[Thh[:mm[:ss]]]]]`, at);
  const n = (i: number, d: number): number => (m[i] === undefined ? d : Number(m[i]));
  return daysFromCivil(n(1, 1970), n(2, 1), n(3, 1)) * 86400 + n(4, 0) * 3600 + n(5, 0) * 60 + n(6, 0);
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
    { name: 'weekdays', args: 1, invert: true },
    { name: 'monthdays', args: 1, invert: true },
    { name: 'localtz', args: 0, as: 'kerneltz' },
    { name: 'kerneltz', args: 0 },
    { name: 'utc', args: 0 },
    { name: 'contiguous', args: 0 },
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
    const days = s.get('weekdays');
    if (days !== undefined) {
      const set = new Set<number>();
      for (const d of (days.values[0] ?? '').split(',')) {
        const k = /^[1-7]$/.test(d) ? Number(d) - 1 : DAYS.findIndex((x) => x.toLowerCase() === d.toLowerCase().slice(0, 3) && d.length >= 2);
        if (k < 0) throw paramProblem(`No, the weekday "${d}" is not supported`);
        set.add(k);
      }
      const chosen = DAYS.filter((_, k) => set.has(k) !== days.invert);
      if (chosen.length === 7) s.delete('weekdays');
      else s.set('weekdays', [chosen.join(',')]);
    }
    const mdays = s.get('monthdays');
    if (mdays !== undefined) {
      const set = new Set<number>();
      for (const d of (mdays.values[0] ?? '').split(',')) {
        const n = /^\d+$/.test(d) ? Number(d) : 0;
        if (n < 1 || n > 31) throw paramProblem(`time: invalid monthday "${d}"`);
        set.add(n);
      }
      const chosen: number[] = [];
      for (let n = 1; n <= 31; n++) if (set.has(n) !== mdays.invert) chosen.push(n);
      if (chosen.length === 31) s.delete('monthdays');
      else s.set('monthdays', [chosen.join(',')]);
    }
    const ds = Number(s.value('datestart') ?? 0);
    if (ds !== 0) s.set('datestart', [dateText(ds)]);
    else s.delete('datestart');
    s.set('datestop', [dateText(Number(s.value('datestop') ?? DATE_MAX))]);
    s.delete('utc');
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
