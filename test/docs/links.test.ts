/**
 * Every relative link in README.md and docs/*.md points at a file that exists and, when it names
 * a heading (`page.md#heading`), at a heading that exists: the README is the front door and docs/
 * the manual, so a moved page or a renamed section must not leave a dead link behind.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of withoutFences(markdown).split('\n')) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = m[1].toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

function withoutFences(markdown: string): string {
  return markdown.replace(/^[ \t]*```[^\n]*\n[\s\S]*?^[ \t]*```/gm, '');
}

/** Fenced blocks and inline code hold examples, not links. */
function withoutCode(markdown: string): string {
  return withoutFences(markdown).replace(/`[^`\n]*`/g, '');
}

/** The broken relative links of one markdown file, as `target: why`. */
function brokenLinks(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const broken: string[] = [];
  for (const [, target] of withoutCode(text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
    const [rel, anchor] = target.split('#', 2);
    const dest = rel === '' ? file : path.resolve(path.dirname(file), decodeURIComponent(rel));
    if (!existsSync(dest)) {
      broken.push(`${target}: no such file`);
    } else if (anchor !== undefined && dest.endsWith('.md') && !anchors(readFileSync(dest, 'utf8')).has(anchor)) {
      broken.push(`${target}: no heading #${anchor} in ${path.relative(root, dest)}`);
    }
  }
  return broken;
}

const pages = ['README.md', ...readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

describe('relative links in README.md and docs/', () => {
  it.each(pages)('%s has none broken', (page) => {
    expect(brokenLinks(path.join(root, page))).toEqual([]);
  });

  it('finds a missing file, a missing heading, and skips code and URLs', () => {
    const dir = path.join(root, 'test/docs/fixtures');
    expect(brokenLinks(path.join(dir, 'broken.md')).sort()).toEqual([
      'gone.md: no such file',
      'ok.md#no-such-heading: no heading #no-such-heading in test/docs/fixtures/ok.md',
    ]);
  });

  it('names anchors as GitHub does', () => {
    expect([...anchors('# Sealed payloads\n## `telastic agent`\n## Reading it back: `history`, `report`\n## Pools\n## Pools\n')]).toEqual([
      'sealed-payloads',
      'telastic-agent',
      'reading-it-back-history-report',
      'pools',
      'pools-1',
    ]);
  });
});
