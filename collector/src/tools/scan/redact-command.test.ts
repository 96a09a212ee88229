import { describe, expect, it } from 'vitest';

import { redactCommand } from './redact-command.ts';

describe('redactCommand', () => {
  it('replaces credential-looking values and keeps the rest of the command', () => {
    expect(redactCommand('GITHUB_TOKEN=ghp_abc123 node "$CLAUDE_PROJECT_DIR"/.claude/hooks/emit.js ctx 12000')).toBe(
      'GITHUB_TOKEN=[redacted] node "$CLAUDE_PROJECT_DIR"/.claude/hooks/emit.js ctx 12000',
    );
    expect(redactCommand(`env API_KEY="a b c" db_password='x y' ./hook.sh`)).toBe('env API_KEY=[redacted] db_password=[redacted] ./hook.sh');
    expect(redactCommand('./hook --token s3cr3t --api-key=k3y --verbose')).toBe('./hook --token [redacted] --api-key=[redacted] --verbose');
    expect(redactCommand('curl -H "Authorization: Bearer abcdefgh12345" https://bob:hunter2@example.com/x')).toBe(
      'curl -H "Authorization: Bearer [redacted]" https://bob:[redacted]@example.com/x',
    );
  });

  it('leaves commands without credentials unchanged', () => {
    for (const command of ['node "$CLAUDE_PROJECT_DIR"/.claude/hooks/emit.js plain 10001', 'HOOK_EVENT=PostToolUse node emit.js ctx 10500', 'cat ~/.claude/notes.md | head -c 9000']) {
      expect(redactCommand(command)).toBe(command);
    }
  });

  // A command is anyone's text in a transcript. With backtracking regexes these took minutes to hours (12,000
  // characters: 17 s, each doubling about 8 times longer); the test's timeout only guards against a hang.
  it('takes time linear in a long hostile command', { timeout: 30_000 }, () => {
    const names = '-token'.repeat(12_000);
    expect(redactCommand(names)).toBe(names);
    const assignments = 'a_token'.repeat(10_000);
    expect(redactCommand(`${assignments}=x`)).toBe(`${assignments}=[redacted]`);
  });
});
