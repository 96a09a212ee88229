import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { jsonMembers, jsonValueEnd } from './json-string.ts';

describe('jsonMembers', () => {
  it('property: each member\'s span holds exactly the value JSON.parse reads for it, whatever the layout', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.constantFrom(undefined, 0, 2, '\t', ' \r\n'), (object, indent) => {
        const text = ` ${JSON.stringify(object, null, indent)}\n`;
        const parsed = JSON.parse(text) as Record<string, unknown>;
        const members = jsonMembers(text, text.indexOf('{'));
        expect([...members.keys()].sort()).toEqual(Object.keys(parsed).sort());
        for (const [key, span] of members) expect(JSON.parse(text.slice(span.start, span.end))).toEqual(parsed[key]);
      }),
      { numRuns: 300 },
    );
  });

  it('reads the head of an object cut short anywhere: the members whose values are whole, none cut short', () => {
    const text = '{"s": "a\\"b", "n":123, "o": {"k": "v"}, "a": [1, "x"], "t": true, "last": "z"}';
    const whole = [...jsonMembers(text, 0)];
    for (let cut = 0; cut <= text.length; cut++) {
      const head = text.slice(0, cut);
      // A value is whole in the head once its last character is in it; a number or literal once a delimiter follows.
      const expected = [];
      for (const member of whole) {
        const [, span] = member;
        if (span.end > cut || (span.end === cut && !/["}\]]/.test(text[span.end - 1] ?? ''))) break;
        expected.push(member);
      }
      expect([...jsonMembers(head, 0)], head).toEqual(expected);
    }
  });

  it('leaves out a key the head is cut after, before its colon, wherever the object starts', () => {
    // Past the end of the text the white-space scan started over at 0: the cut key's value was said to sit there.
    for (const text of [' {"a": "b", "c"', '\n{"a": "b", "c" ', ' {"a": "b", "c" :', '{"a": "b", "c"']) {
      const open = text.indexOf('{');
      expect([...jsonMembers(text, open).keys()], JSON.stringify(text)).toEqual(['a']);
    }
    // Nor is a key given twice replaced by its cut repeat.
    expect(jsonMembers(' {"a": "b", "a"', 1).get('a')).toEqual({ start: 7, end: 10 });
  });

  it('keeps the last of a key given twice, reads escaped keys as JSON.parse does, and leaves numbers as written', () => {
    const text = '{"a": {"b": "}\\""}, "n" :1.0 , "\\u0061": [1e3, "]"], "x":-0.5E+2}';
    const members = jsonMembers(text, 0);
    expect([...members.keys()]).toEqual(['n', 'a', 'x']);
    const at = (key: string): string => {
      const span = members.get(key);
      return span === undefined ? '' : text.slice(span.start, span.end);
    };
    expect([at('a'), at('n'), at('x')]).toEqual(['[1e3, "]"]', '1.0', '-0.5E+2']);
    expect(jsonValueEnd('"ab\\\\"', 0)).toBe(6);
  });
});
