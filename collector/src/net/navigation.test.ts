import { describe, expect, it } from 'vitest';
import { isNavigation } from './navigation.ts';

describe('isNavigation', () => {
  it.each([
    [{}, false],
    [{ accept: '*/*' }, false],
    [{ accept: 'application/json' }, false],
    [{ accept: 'text/html' }, true],
    [{ accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' }, true],
    [{ accept: 'application/json, text/html' }, false],
    [{ accept: 'text/html, application/json' }, true],
    [{ accept: 'text/*' }, true],
    [{ accept: 'text/html;q=0.5, application/json;q=0.6' }, false],
    [{ accept: 'text/html;q=0, */*' }, false],
    [{ accept: 'application/*, text/html' }, true],
    [{ accept: '*/*, text/html;q=0.9' }, false],
    [{ accept: 'text/html;q=0.9, */*' }, false],
    [{ accept: 'garbage' }, false],
    [{ 'sec-fetch-mode': 'navigate' }, true],
    [{ 'sec-fetch-mode': 'cors', accept: '*/*' }, false],
  ])('%j: %s', (headers, expected) => {
    expect(isNavigation(headers)).toBe(expected);
  });
});
