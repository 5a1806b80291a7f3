/**
 * The activity screen's figure (issue 41): one inline SVG per agent, drawn by the page's own code (no library,
 * nothing fetched; colours from the stylesheet's classes, so both themes and the CSP's style-src 'self' hold).
 * Each bar segment carries its numbers as data attributes and a title; the same numbers are in a table beside it.
 */
const SVG = 'http://www.w3.org/2000/svg';

export type DayCount = { day: string; sector: string | null; calls: number; denied: number };

export const SECTOR_ORDER = ['finance', 'health', 'mail', 'contacts', 'calendar', 'home'] as const;
/** Calls that touched no sector (describe_context and the like). */
export const NO_SECTOR = 'none';

const WIDTH = 640;
const HEIGHT = 160;
const TOP = 16;
const BOTTOM = 22;
const LEFT = 36;

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attributes: Record<string, string | number>, text?: string): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  if (text !== undefined) element.textContent = text;
  return element;
}

export const sectorName = (sector: string | null) => sector ?? NO_SECTOR;
const sectorRank = (sector: string) => {
  const index = (SECTOR_ORDER as readonly string[]).indexOf(sector);
  return index === -1 ? SECTOR_ORDER.length + (sector === NO_SECTOR ? 1 : 0) : index;
};
export const bySector = (a: string, b: string) => sectorRank(a) - sectorRank(b) || a.localeCompare(b);

/** Calls per day stacked by sector for one agent, days left to right; a refusal mark above each day with denies. */
export function drawAgentChart(agent: string, days: readonly string[], counts: readonly DayCount[]): SVGSVGElement {
  const plotHeight = HEIGHT - TOP - BOTTOM;
  const step = (WIDTH - LEFT) / days.length;
  const totals = new Map<string, number>();
  for (const count of counts) totals.set(count.day, (totals.get(count.day) ?? 0) + count.calls);
  const highest = Math.max(1, ...totals.values());
  const figure = svg('svg', { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: 'img', class: 'activity-chart', 'data-agent': agent });
  figure.append(svg('title', {}, `Calls per day by ${agent} over the last ${days.length} days, stacked by sector`));
  figure.append(svg('line', { x1: LEFT, y1: TOP + plotHeight, x2: WIDTH, y2: TOP + plotHeight, class: 'axis' }));
  figure.append(svg('text', { x: LEFT - 4, y: TOP + 4, class: 'axis-label', 'text-anchor': 'end' }, String(highest)));
  figure.append(svg('text', { x: LEFT - 4, y: TOP + plotHeight, class: 'axis-label', 'text-anchor': 'end' }, '0'));
  days.forEach((day, index) => {
    const x = LEFT + index * step + 1;
    const ofDay = counts.filter((count) => count.day === day).sort((a, b) => bySector(sectorName(a.sector), sectorName(b.sector)));
    let y = TOP + plotHeight;
    let denied = 0;
    for (const count of ofDay) {
      const height = (count.calls / highest) * plotHeight;
      y -= height;
      denied += count.denied;
      const sector = sectorName(count.sector);
      const bar = svg('rect', {
        x,
        y,
        width: Math.max(1, step - 2),
        height,
        class: `bar sector-${sector}`,
        'data-day': day,
        'data-sector': sector,
        'data-calls': count.calls,
        'data-denied': count.denied,
      });
      bar.append(svg('title', {}, `${day}: ${count.calls} ${sector} calls, ${count.denied} refused`));
      figure.append(bar);
    }
    if (denied > 0) {
      const mark = svg('path', { d: `M ${x + (step - 2) / 2} ${y - 3} l -4 -7 h 8 z`, class: 'refusal-mark', 'data-day': day, 'data-denied': denied });
      mark.append(svg('title', {}, `${day}: ${denied} refused`));
      figure.append(mark);
    }
    const last = index === days.length - 1;
    if (last || (index % 7 === (days.length - 1) % 7 && index < days.length - 4)) {
      figure.append(svg('text', { x: last ? WIDTH : x + step / 2, y: HEIGHT - 6, class: 'axis-label', 'text-anchor': last ? 'end' : 'middle' }, day.slice(5)));
    }
  });
  return figure;
}
