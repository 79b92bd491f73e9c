// The next run times of a five-field cron schedule in an IANA time zone, computed in the
// browser (the API has no preview route): numbers, `*`, ranges, steps, lists, and English
// month and weekday names, as the API accepts them. The API's own `next_run_at` stays the
// authority; this is a preview.

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
const FIELDS = [
  { lo: 0, hi: 59 },
  { lo: 0, hi: 23 },
  { lo: 1, hi: 31 },
  { lo: 1, hi: 12, names: MONTHS, base: 1 },
  { lo: 0, hi: 7, names: DAYS, base: 0 },
];

function value(text, field) {
  const lower = text.toLowerCase();
  if (field.names && field.names.includes(lower)) return field.names.indexOf(lower) + field.base;
  if (!/^\d+$/.test(text)) throw new Error(`"${text}" is not a number`);
  const number = Number(text);
  if (number < field.lo || number > field.hi) throw new Error(`${number} is outside ${field.lo}-${field.hi}`);
  return number;
}

function parseField(text, field) {
  const set = new Set();
  for (const part of text.split(",")) {
    const [range, stepText] = part.split("/");
    const step = stepText === undefined ? 1 : value(stepText, { lo: 1, hi: field.hi });
    let from, to;
    if (range === "*") [from, to] = [field.lo, field.hi];
    else if (range.includes("-")) [from, to] = range.split("-").map((v) => value(v, field));
    else [from, to] = [value(range, field), stepText === undefined ? value(range, field) : field.hi];
    if (from > to) throw new Error(`range ${range} runs backwards`);
    for (let i = from; i <= to; i += step) set.add(i);
  }
  return set;
}

export function parseCron(expression) {
  const parts = expression.trim().split(/\s+/);
  if (parts.length !== 5) throw new Error("a schedule has five fields: minute hour day month weekday");
  const [minute, hour, day, month, weekday] = parts.map((p, i) => parseField(p, FIELDS[i]));
  if (weekday.has(7)) weekday.add(0);
  return { minute, hour, day, month, weekday, anyDay: parts[2] === "*", anyWeekday: parts[4] === "*" };
}

function localParts(format, date) {
  const parts = {};
  for (const { type, value: v } of format.formatToParts(date)) parts[type] = v;
  return {
    month: Number(parts.month),
    day: Number(parts.day),
    hour: Number(parts.hour) % 24,
    minute: Number(parts.minute),
    weekday: DAYS.indexOf(parts.weekday.toLowerCase().slice(0, 3)),
    label: `${parts.year}-${parts.month}-${parts.day} ${String(Number(parts.hour) % 24).padStart(2, "0")}:${parts.minute}`,
  };
}

/** The next `count` run times after `from`, as `{at: Date, label}` in `timeZone`. */
export function nextRuns(expression, timeZone, count = 5, from = new Date()) {
  const cron = parseCron(expression);
  const format = new Intl.DateTimeFormat("en-US", {
    timeZone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit",
    hour: "2-digit", minute: "2-digit", weekday: "short",
  });
  const runs = [];
  let t = Math.floor(from.getTime() / 60000) * 60000 + 60000;
  for (let guard = 0; runs.length < count && guard < 200000; guard++) {
    const p = localParts(format, new Date(t));
    const dayOk = cron.anyDay || cron.anyWeekday
      ? cron.day.has(p.day) && cron.weekday.has(p.weekday)
      : cron.day.has(p.day) || cron.weekday.has(p.weekday);
    if (!cron.month.has(p.month) || !dayOk) {
      t += ((23 - p.hour) * 60 + (60 - p.minute)) * 60000;  // the next local day
    } else if (!cron.hour.has(p.hour)) {
      t += (60 - p.minute) * 60000;  // the next hour
    } else if (!cron.minute.has(p.minute)) {
      t += 60000;
    } else {
      if (!runs.length || runs[runs.length - 1].label !== p.label) runs.push({ at: new Date(t), label: p.label });
      t += 60000;
    }
  }
  return runs;
}
