/**
 * A TCP proxy in front of PostgreSQL that can forget connections the way a NAT, a firewall or a load balancer
 * drops an idle flow: from then on nothing passes either way and nobody is told (no FIN, no reset), while new
 * connections pass as before. It can also cut the network off (a partition): every connection is dropped and new
 * ones are never answered, until it heals. Connections are told apart by the `application_name` of their startup message
 * (plain text: the test server does not use TLS).
 */
import { spawn } from 'node:child_process';
import { connect, createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface FlowProxy {
  /** `url` (the server's) rewritten to go through the proxy, on 127.0.0.1. */
  via(url: string): string;
  /** Silently drops every open connection whose application_name is `app`: its bytes go nowhere from now on. */
  drop(app: string): number;
  /**
   * Drops the open connections of `app` as drop() does, and down to TCP: the proxy's end of each one acknowledges
   * nothing from now on, TCP keepalive probes included, as when a NAT or firewall forgot the flow and discards its
   * packets. (After drop() alone the proxy's operating system still acknowledges them.) Resolves to how many.
   */
  forget(app: string): Promise<number>;
  /**
   * Lets the open connections of `app` on until one sends a message holding `text` (a statement): that one is
   * answered, and the connection is dropped as by drop() at the next thing it sends, which never reaches the server.
   */
  dropAfter(app: string, text: string): number;
  /**
   * Cuts the network off: every open connection is dropped as by drop(), and a new one is never answered (as when
   * its packets go nowhere), until heal(). Returns how many were dropped.
   */
  cutOff(): number;
  /** New connections pass again; those dropped stay dropped (as flows a NAT forgot meanwhile). */
  heal(): void;
  /** How many connections of `app` made while cut off are still open, waiting for an answer that never comes. */
  unanswered(app: string): number;
  close(): Promise<void>;
}

interface Flow {
  client: Socket;
  server: Socket;
  app: string | undefined;
  /** dropAfter's text, and whether the client has sent it. */
  dropAfter?: { text: string; sent: boolean };
}

/** Silently drops the flow: nothing passes either way from now on, and nobody is told. */
function dropFlow(f: Flow): void {
  f.server.unpipe(f.client);
  // Read and discard: the sender's writes succeed as into a network that loses them.
  f.client.removeAllListeners('data').on('data', () => {});
  f.server.removeAllListeners('data').on('data', () => {});
}

/**
 * Perl (there wherever the test server is: Debian's PostgreSQL packaging runs on it) attaches to the socket given as
 * its fd 3 a classic BPF filter of one instruction, "return 0" (struct sock_filter: code BPF_RET|BPF_K, jt, jf, k = 0;
 * struct sock_fprog: its length and address). The kernel then discards every packet that socket receives before TCP
 * sees it: nothing is acknowledged nor answered. The filter is the socket's, so it outlives the process that set it.
 * It waits first until what the socket sent is acknowledged (tcp_info's tcpi_unacked, at byte 24, is 0): a segment
 * left unacknowledged would be sent again and again, each time reaching the client, as no NAT that forgot the flow
 * would let it.
 */
const DISCARD_ALL = `use Socket qw(SOL_SOCKET IPPROTO_TCP); open(my $s, '+<&=', 3) or die "fd 3: $!";
my $unacked = sub { unpack('x24 L', getsockopt($s, IPPROTO_TCP, 11)) };
for (1 .. 500) { last if $unacked->() == 0; select(undef, undef, undef, 0.01) }
die 'still unacknowledged after 5 s' if $unacked->() != 0;
my $ret0 = pack('S C C L', 0x06, 0, 0, 0);
setsockopt($s, SOL_SOCKET, 26, pack('S x![p] p', 1, $ret0)) or die "SO_ATTACH_FILTER: $!";`;

/** Makes the kernel discard everything `socket` receives (DISCARD_ALL). */
function discardAll(socket: Socket): Promise<void> {
  return new Promise((resolve, reject) => {
    const perl = spawn('perl', ['-e', DISCARD_ALL], { stdio: ['ignore', 'ignore', 'pipe', socket] });
    let stderr = '';
    perl.stderr?.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
    perl.on('error', reject).on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`perl exited with ${code}: ${stderr}`))));
  });
}

/** The application_name of a connection's first chunk, its startup message: length, protocol, then name\0value\0 pairs. */
function appOf(chunk: Buffer): string {
  return /application_name\0([^\0]*)\0/.exec(chunk.toString('latin1'))?.[1] ?? '';
}

export async function startFlowProxy(target: { host: string; port: number }): Promise<FlowProxy> {
  const flows = new Set<Flow>();
  /** Connections made while cut off, with their application_name once sent: read and never answered, nor passed on. */
  const unanswered = new Map<Socket, string | undefined>();
  let cut = false;
  const proxy = createServer((client) => {
    if (cut) {
      unanswered.set(client, undefined);
      client.on('data', (chunk: Buffer) => void unanswered.set(client, unanswered.get(client) ?? appOf(chunk))).on('error', () => client.destroy()).on('close', () => unanswered.delete(client));
      return;
    }
    const server = connect(target.port, target.host);
    const flow: Flow = { client, server, app: undefined };
    flows.add(flow);
    const end = (): void => {
      flows.delete(flow);
      client.destroy();
      server.destroy();
    };
    client.on('error', end).on('close', end);
    server.on('error', end).on('close', end);
    // Forwarded by hand, not piped: a chunk that comes after dropAfter's text must not reach the server.
    client.on('data', (chunk: Buffer) => {
      flow.app ??= appOf(chunk);
      const after = flow.dropAfter;
      if (after?.sent) {
        dropFlow(flow);
        return;
      }
      if (after && chunk.includes(after.text)) after.sent = true;
      if (!server.write(chunk)) {
        client.pause();
        server.once('drain', () => client.resume());
      }
    });
    server.pipe(client);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const port = (proxy.address() as AddressInfo).port;
  /** Drops the open connections of `app` (drop()), and says which. */
  const dropApp = (app: string): Flow[] => {
    const dropped = [...flows].filter((f) => f.app === app);
    for (const f of dropped) dropFlow(f);
    return dropped;
  };
  return {
    via: (url) => {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    drop: (app) => dropApp(app).length,
    async forget(app) {
      const forgotten = dropApp(app);
      await Promise.all(forgotten.map((f) => discardAll(f.client)));
      return forgotten.length;
    },
    dropAfter(app, text) {
      let n = 0;
      for (const f of flows) {
        if (f.app !== app) continue;
        f.dropAfter = { text, sent: false };
        n++;
      }
      return n;
    },
    cutOff() {
      cut = true;
      for (const f of flows) dropFlow(f);
      return flows.size;
    },
    heal() {
      cut = false;
    },
    unanswered: (app) => [...unanswered.values()].filter((a) => a === app).length,
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of unanswered.keys()) c.destroy();
        for (const f of flows) {
          f.client.destroy();
          f.server.destroy();
        }
        proxy.close(() => resolve());
      }),
  };
}
