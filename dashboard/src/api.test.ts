import { describe, expect, it } from 'vitest';
import { withQuery } from './api.ts';

describe('API requests', () => {
  it('send a filter on the empty value (the events without the attribute) and leave out the parameters not given', () => {
    expect(withQuery('/api/v1/hooks/0123456789abcdef', { from: 'now-24h', to: 'now', team: '', cursor: undefined })).toBe('/api/v1/hooks/0123456789abcdef?from=now-24h&to=now&team=');
    expect(withQuery('/api/v1/dimensions')).toBe('/api/v1/dimensions');
  });
});
