import { describe, expect, it } from 'vitest';

import { findPersistedOutputs, savedPathSession } from './persisted-marker.ts';

const marker = (preview: string): string =>
  `<persisted-output>\nOutput too large (17.7KB). Full output saved to: /x/tool-results/hook-1-x.txt\n\nPreview (first 2KB):\n${preview}\n</persisted-output>`;

describe('findPersistedOutputs', () => {
  it('reads the size, the saved path and the preview without its trailing blanks', () => {
    expect(findPersistedOutputs(marker('first line\nsecond  \t'))).toEqual([{ sizeLabel: '17.7KB', savedPath: '/x/tool-results/hook-1-x.txt', preview: 'first line\nsecond' }]);
  });

  it('reads a saved path holding spaces to the end of its line, whatever the line ending', () => {
    const at = (path: string, eol: string): string | undefined =>
      findPersistedOutputs(`<persisted-output>${eol}Output too large (17.7KB). Full output saved to: ${path} ${eol}${eol}Preview (first 2KB):${eol}x${eol}</persisted-output>`)[0]?.savedPath;
    expect(at('/home/John Smith/.claude/projects/p/s-1/tool-results/hook-1-x.txt', '\n')).toBe('/home/John Smith/.claude/projects/p/s-1/tool-results/hook-1-x.txt');
    expect(at('C:\\Users\\John Smith\\.claude\\projects\\p\\s-1\\tool-results\\hook-1-x.txt', '\r\n')).toBe('C:\\Users\\John Smith\\.claude\\projects\\p\\s-1\\tool-results\\hook-1-x.txt');
  });

  // A transcript is anyone's text: trimming the preview with /\s+$/ was quadratic in a run of blanks (80,000
  // spaces: 6 s). The test's timeout only guards against a hang.
  it('takes time linear in a preview of 400,000 blanks', { timeout: 30_000 }, () => {
    expect(findPersistedOutputs(marker(`${' '.repeat(400_000)}x`))[0]?.preview).toBe(`${' '.repeat(400_000)}x`);
  });
});

describe('savedPathSession', () => {
  it('names the session folder the output was saved in, and nothing for a path laid out otherwise', () => {
    expect(savedPathSession('/home/dev/.claude/projects/-home-dev-proj/229cfef5-26c4/tool-results/hook-1-x.txt')).toBe('229cfef5-26c4');
    expect(savedPathSession('C:\\Users\\dev\\.claude\\projects\\p\\s-1\\tool-results\\hook-1-x.txt')).toBe('s-1');
    expect(savedPathSession('/tmp/hook-1-x.txt')).toBeUndefined();
    expect(savedPathSession('tool-results/hook-1-x.txt')).toBeUndefined();
    expect(savedPathSession(undefined)).toBeUndefined();
  });
});
