import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// docs/decisions.md opens with an index of its sections; a renamed or removed heading must not leave a link
// that goes nowhere. Sections appended after the index was written may be missing from it.

const text = readFileSync(path.resolve(import.meta.dirname, '../../docs/decisions.md'), 'utf8');

/** The anchor a Markdown renderer (GitHub's rule) gives a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replaceAll(' ', '-');

const firstSection = text.indexOf('\n## ');
const headings = [...text.slice(firstSection).matchAll(/^## (.+)$/gm)].map((match) => match[1] ?? '');
const links = [...text.slice(0, firstSection).matchAll(/^- \[(.+?)\]\(#([^)]+)\)/gm)].map((match) => ({ title: match[1] ?? '', anchor: match[2] ?? '' }));

describe('the index at the top of docs/decisions.md', () => {
  it('links each entry to a section heading of that title, in the order of the sections', () => {
    expect(links.length).toBeGreaterThan(30);
    const places = links.map(({ title, anchor }) => {
      expect(anchor, title).toBe(anchorOf(title));
      const place = headings.indexOf(title);
      expect(place, `no section "${title}"`).toBeGreaterThanOrEqual(0);
      return place;
    });
    expect(places).toEqual([...places].sort((a, b) => a - b));
  });
});
