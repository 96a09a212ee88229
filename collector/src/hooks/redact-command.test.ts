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

  it('replaces header values, user passwords, keys and known token formats', () => {
    const cases: [string, string][] = [
      ['curl -H "Authorization: token ghp_abcdefghijklmnop1234" https://api.github.com', 'curl -H "Authorization: token [redacted]" https://api.github.com'],
      ["curl -H 'authorization:ghp_abcdefghijklmnop1234' https://x", "curl -H 'authorization: [redacted]' https://x"],
      ['curl -H "X-Api-Key: abc123secret" https://x', 'curl -H "X-Api-Key: [redacted]" https://x'],
      ['curl -H "X-Auth-Token: a b c" -H "Cookie: sid=1; other=2" https://x', 'curl -H "X-Auth-Token: [redacted]" -H "Cookie: [redacted]" https://x'],
      ['curl -H X-Vault-Token:s.abc123 https://x', 'curl -H X-Vault-Token: [redacted] https://x'],
      ['curl -u admin:hunter2 https://x', 'curl -u admin:[redacted] https://x'],
      ['curl --user=admin:hunter2 https://x', 'curl --user=admin:[redacted] https://x'],
      ['mysql -phunter2 db', 'mysql -p[redacted] db'],
      ['mysqldump -u root -phunter2 db | gzip', 'mysqldump -u root -p[redacted] db | gzip'],
      ['node hook.js --key sk-ant-api03-abcdefghijk', 'node hook.js --key [redacted]'],
      ['node hook.js --ssh-key=/home/dev/.ssh/id', 'node hook.js --ssh-key=[redacted]'],
      ['STRIPE_KEY=rk_live_abc node x.js', 'STRIPE_KEY=[redacted] node x.js'],
      ['OPENAI_API_KEY=sk-abc node x.js', 'OPENAI_API_KEY=[redacted] node x.js'],
      ['gh api -f body=x ghp_abcdefghijklmnop1234', 'gh api -f body=x ghp_[redacted]'],
      ['notify github_pat_11ABCDEFG0123456789_abcdefghij', 'notify github_pat_[redacted]'],
      ['notify gho_abcdefghijklmnop1234 sk-ant-api03-abcdefghijk sk-proj-abcdefghijklmnop', 'notify gho_[redacted] sk-ant-[redacted] sk-proj-[redacted]'],
      ['notify xoxb-1234-5678-abcd xoxp-99-abc', 'notify xoxb-[redacted] xoxp-[redacted]'],
      ['aws --profile x AKIAIOSFODNN7EXAMPLE', 'aws --profile x AKIA[redacted]'],
    ];
    for (const [command, redacted] of cases) expect(redactCommand(command), command).toBe(redacted);
  });

  it('keeps only the scheme and host of webhook URLs and of URLs with an opaque path', () => {
    const cases: [string, string][] = [
      ['curl -s -X POST https://hooks.slack.com/services/T0123/B0456/abcdefSECRETxyz -d @-', 'curl -s -X POST https://hooks.slack.com/[redacted] -d @-'],
      ['node notify.js https://discord.com/api/webhooks/123/SECRETTOKEN', 'node notify.js https://discord.com/[redacted]'],
      ['node notify.js "https://example.webhook.office.com/webhookb2/abc/IncomingWebhook/def"', 'node notify.js "https://example.webhook.office.com/[redacted]"'],
      ['curl https://hooks.example.com/in/a1b2c3d4e5f6g7h8i9j0?x=1', 'curl https://hooks.example.com/[redacted]'],
      ['curl "https://chat.googleapis.com/v1/spaces/AAA/messages?key=AIzaSyDdI0hCZtE6vySjMm&token=abc"', 'curl "https://chat.googleapis.com/[redacted]"'],
    ];
    for (const [command, redacted] of cases) expect(redactCommand(command), command).toBe(redacted);
    for (const command of ['curl -s https://api.github.com/repos/octo/hello-world/issues', 'curl https://example.com/docs/getting-started/install?lang=en', 'open http://localhost:4318/v1/logs']) {
      expect(redactCommand(command)).toBe(command);
    }
  });

  it('leaves commands without credentials unchanged', () => {
    for (const command of ['node "$CLAUDE_PROJECT_DIR"/.claude/hooks/emit.js plain 10001', 'HOOK_EVENT=PostToolUse node emit.js ctx 10500', 'cat ~/.claude/notes.md | head -c 9000', 'mkdir -p /tmp/x && sort -u -k2 a.txt', 'docker run -p 8080:80 img', "jq '{key: .value}' in.json"]) {
      expect(redactCommand(command)).toBe(command);
    }
  });

  // The server redacts what `scan` already redacted: a finding sent again must be stored under the same command.
  it('changes nothing in a command it already redacted', () => {
    const commands = [
      'GITHUB_TOKEN=ghp_abc123 node emit.js',
      `env API_KEY="a b c" db_password='x y' ./hook.sh`,
      './hook --token s3cr3t --api-key=k3y --password "p w" -p=x',
      'curl -H "Authorization: Bearer abcdefgh12345" https://bob:hunter2@example.com/x',
      'curl -H "Authorization: token ghp_abcdefghijklmnop1234" https://hooks.slack.com/services/T0123/B0456/abcdefSECRETxyz',
      "curl -H 'authorization:ghp_abcdefghijklmnop1234' -H \"Proxy-Authorization: Basic dXNlcjpwYXNz\" https://x",
      'curl -H "X-Auth-Token: a b c" -H "Cookie: sid=1; other=2" -H X-Vault-Token:s.abc123 https://x',
      'curl -u admin:hunter2 https://x && curl --user=admin:hunter2 https://y && curl --user admin:hunter2 https://z',
      'mysqldump -u root -phunter2 db | gzip',
      'node hook.js --key sk-ant-api03-abcdefghijk --ssh-key=/home/dev/.ssh/id STRIPE_KEY=rk_live_abc',
      'notify github_pat_11ABCDEFG0123456789_abcdefghij gho_abcdefghijklmnop1234 sk-proj-abcdefghijklmnop xoxb-1234-5678-abcd AKIAIOSFODNN7EXAMPLE',
      'node notify.js https://discord.com/api/webhooks/123/SECRETTOKEN "https://example.webhook.office.com/webhookb2/abc/IncomingWebhook/def"',
      'curl "https://chat.googleapis.com/v1/spaces/AAA/messages?key=AIzaSyDdI0hCZtE6vySjMm&token=abc" https://hooks.example.com/in/a1b2c3d4e5f6g7h8i9j0?x=1',
      'node "$CLAUDE_PROJECT_DIR"/.claude/hooks/emit.js plain 10001',
    ];
    for (const command of commands) {
      const once = redactCommand(command);
      expect(redactCommand(once), command).toBe(once);
    }
    // Each one had something to redact, but the last.
    expect(commands.filter((c) => redactCommand(c) === c)).toEqual([commands.at(-1)]);
  });

  // A command is anyone's text in a transcript. With backtracking regexes these took minutes to hours (12,000
  // characters: 17 s, each doubling about 8 times longer); the test's timeout only guards against a hang.
  it('takes time linear in a long hostile command', { timeout: 30_000 }, () => {
    const names = '-token'.repeat(12_000);
    expect(redactCommand(names)).toBe(names);
    const assignments = 'a_token'.repeat(10_000);
    expect(redactCommand(`${assignments}=x`)).toBe(`${assignments}=[redacted]`);
    const url = `https://${'a.'.repeat(10_000)}x${'/a_token'.repeat(10_000)}?x_token=1`;
    expect(redactCommand(url)).toBe(`https://${'a.'.repeat(10_000)}x/[redacted]`);
  });
});
