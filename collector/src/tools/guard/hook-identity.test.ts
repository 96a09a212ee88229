import { describe, expect, it } from 'vitest';

import { hookIdentity, topLevelStrings } from './hook-identity.ts';

/** What Claude Code writes to a PostToolUse hook's stdin for a Write, in its member order. */
function writeInput(content: string): string {
  return JSON.stringify({
    session_id: 'sess-big',
    transcript_path: '/home/dev/.claude/projects/-home-dev-proj/sess-big.jsonl',
    cwd: '/home/dev/proj',
    permission_mode: 'default',
    hook_event_name: 'PostToolUse',
    tool_name: 'Write',
    tool_input: { file_path: '/home/dev/proj/big.txt', content },
    tool_response: { success: true },
    tool_use_id: 'toolu_01',
  });
}

describe('hookIdentity', () => {
  it('names the hook of a whole input', () => {
    expect(hookIdentity(writeInput('small'))).toEqual({ hookEvent: 'PostToolUse', hookName: 'PostToolUse:Write', sessionId: 'sess-big' });
  });

  it('names the hook from the head of an input cut short, not "unknown"', () => {
    const whole = writeInput('x'.repeat(2_000_000));
    expect(hookIdentity(whole.slice(0, 1024 * 1024))).toEqual({ hookEvent: 'PostToolUse', hookName: 'PostToolUse:Write', sessionId: 'sess-big' });
  });

  it('reads no member out of a nested value, even one that looks like a matcher field', () => {
    const head = writeInput(`{"source":"startup","hook_event_name":"SessionStart"} ${'y'.repeat(5_000)}`).slice(0, 2_000);
    expect(hookIdentity(head).hookName).toBe('PostToolUse:Write');
    expect(topLevelStrings('{"a":{"b":"c"},"d":[1,"e"],"f":"g\\"h","i":2,"j":"k')).toEqual({ f: 'g"h' });
  });

  it('reads a member from a head only once its value is whole, wherever the head is cut', () => {
    const whole = writeInput('small');
    const named = whole.indexOf('"Write"') + '"Write"'.length;
    for (let cut = 0; cut <= whole.length; cut++) {
      const found = hookIdentity(whole.slice(0, cut));
      expect(['unknown', 'PostToolUse'], String(cut)).toContain(found.hookEvent);
      expect([undefined, 'sess-big'], String(cut)).toContain(found.sessionId);
      if (cut >= named) expect(found.hookName, String(cut)).toBe('PostToolUse:Write');
    }
    // Text that only looks like JSON is read up to where it stops being JSON.
    expect(topLevelStrings('{"hook_event_name":"Stop","a":"\\q","\\x":"y","b":"c"}')).toEqual({ hook_event_name: 'Stop' });
  });

  it('is "unknown" for input that is not a JSON object', () => {
    expect(hookIdentity('hello')).toEqual({ hookEvent: 'unknown', hookName: 'unknown', sessionId: undefined });
    expect(hookIdentity('["PostToolUse"')).toEqual({ hookEvent: 'unknown', hookName: 'unknown', sessionId: undefined });
  });
});
