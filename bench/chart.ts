/** A small log-log line chart as SVG: decode time against message size, one line per decoder. */
export interface Series {
  name: string;
  /** [x, y] points; y may be missing where a decoder was not run. */
  points: Array<[number, number]>;
}

const COLORS = ['#1b9e77', '#d95f02', '#7570b3', '#e7298a', '#66a61e', '#e6ab02', '#a6761d', '#666666'];

function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export function lineChart(title: string, xLabel: string, yLabel: string, series: Series[]): string {
  const width = 760;
  const height = 460;
  const left = 70;
  const right = 200;
  const top = 40;
  const bottom = 50;
  const xs = series.flatMap((s) => s.points.map(([x]) => x));
  const ys = series.flatMap((s) => s.points.map(([, y]) => y));
  const [x0, x1] = [Math.log2(Math.min(...xs)), Math.log2(Math.max(...xs))];
  const [y0, y1] = [Math.floor(Math.log10(Math.min(...ys))), Math.ceil(Math.log10(Math.max(...ys)))];
  const px = (x: number): number => left + ((Math.log2(x) - x0) / (x1 - x0 || 1)) * (width - left - right);
  const py = (y: number): number => height - bottom - ((Math.log10(y) - y0) / (y1 - y0 || 1)) * (height - top - bottom);
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`);
  out.push(`<rect width="${width}" height="${height}" fill="white"/>`);
  out.push(`<text x="${left}" y="22" font-size="14" font-weight="bold">${escapeXml(title)}</text>`);
  for (let e = y0; e <= y1; e++) {
    const y = py(10 ** e);
    out.push(`<line x1="${left}" x2="${width - right}" y1="${y}" y2="${y}" stroke="#ddd"/>`);
    out.push(`<text x="${left - 6}" y="${y + 4}" text-anchor="end">${10 ** e >= 1 ? 10 ** e : (10 ** e).toFixed(-e)}</text>`);
  }
  for (const x of [...new Set(xs)].sort((a, b) => a - b)) {
    const X = px(x);
    out.push(`<line x1="${X}" x2="${X}" y1="${top}" y2="${height - bottom}" stroke="#eee"/>`);
    out.push(`<text x="${X}" y="${height - bottom + 16}" text-anchor="middle">${x}</text>`);
  }
  out.push(`<text x="${(left + width - right) / 2}" y="${height - 12}" text-anchor="middle">${escapeXml(xLabel)}</text>`);
  out.push(`<text transform="translate(16 ${(top + height - bottom) / 2}) rotate(-90)" text-anchor="middle">${escapeXml(yLabel)}</text>`);
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length]!;
    const pts = s.points.map(([x, y]) => `${px(x).toFixed(1)},${py(y).toFixed(1)}`).join(' ');
    out.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${pts}"/>`);
    for (const [x, y] of s.points) out.push(`<circle cx="${px(x).toFixed(1)}" cy="${py(y).toFixed(1)}" r="3" fill="${color}"/>`);
    const ly = top + 10 + i * 20;
    out.push(`<line x1="${width - right + 15}" x2="${width - right + 40}" y1="${ly}" y2="${ly}" stroke="${color}" stroke-width="3"/>`);
    out.push(`<text x="${width - right + 46}" y="${ly + 4}">${escapeXml(s.name)}</text>`);
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

export interface BarGroup {
  label: string;
  /** One bar per client; a missing value (the client could not do it) is drawn as a note. */
  bars: Array<{ name: string; value: number | undefined }>;
}

/** Horizontal bars, one group per case, each bar's length its value (ms) against the group's longest. */
export function barChart(title: string, unit: string, groups: BarGroup[]): string {
  const width = 760;
  const left = 300;
  const barHeight = 14;
  const rowsPerGroup = Math.max(...groups.map((g) => g.bars.length));
  const groupHeight = rowsPerGroup * (barHeight + 4) + 14;
  const height = 50 + groups.length * groupHeight;
  const names = [...new Set(groups.flatMap((g) => g.bars.map((b) => b.name)))];
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`);
  out.push(`<rect width="${width}" height="${height}" fill="white"/>`);
  out.push(`<text x="10" y="22" font-size="14" font-weight="bold">${escapeXml(title)}</text>`);
  groups.forEach((g, gi) => {
    const y0 = 40 + gi * groupHeight;
    out.push(`<text x="10" y="${y0 + 12}">${escapeXml(g.label)}</text>`);
    const longest = Math.max(...g.bars.map((b) => b.value ?? 0), 1);
    g.bars.forEach((b, bi) => {
      const y = y0 + bi * (barHeight + 4);
      const color = COLORS[names.indexOf(b.name) % COLORS.length]!;
      if (b.value === undefined) {
        out.push(`<text x="${left}" y="${y + 11}" fill="${color}">${escapeXml(b.name)}: could not do it</text>`);
        return;
      }
      const w = (b.value / longest) * (width - left - 150);
      out.push(`<rect x="${left}" y="${y}" width="${w.toFixed(1)}" height="${barHeight}" fill="${color}"/>`);
      out.push(`<text x="${(left + w + 6).toFixed(1)}" y="${y + 11}">${escapeXml(`${b.name} ${b.value.toFixed(0)} ${unit}`)}</text>`);
    });
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
