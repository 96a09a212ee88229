/**
 * Whether a request is a page load in a browser (the address bar, a link, a bookmark): `Sec-Fetch-Mode: navigate`,
 * or, from a browser that does not send it, an Accept that prefers a web page to JSON, as content negotiation
 * ranks them (RFC 9110 section 12.5.1: the higher quality, then the more specific range, then the one listed
 * first; JSON on a tie). curl's and fetch's `*\/*`, no Accept, and JSON asked for are API clients.
 */
import type { IncomingHttpHeaders } from 'node:http';

/** How well an Accept header takes a media type: its quality, how specific the range that gave it, where it was listed. */
interface Match {
  q: number;
  specific: number;
  order: number;
}

function match(accept: string, type: string): Match | undefined {
  const [main, sub] = type.split('/');
  let best: Match | undefined;
  accept.split(',').forEach((part, order) => {
    const [range = '', ...params] = part.split(';').map((p) => p.trim().toLowerCase());
    const [rMain, rSub] = range.split('/');
    if (!rMain || !rSub) return;
    const specific = (rMain === main ? 4 : rMain === '*' ? 0 : -1) + (rSub === sub ? 2 : rSub === '*' ? 0 : -10);
    if (specific < 0) return;
    const qParam = params.find((p) => p.startsWith('q='));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    if (!Number.isFinite(q)) return;
    const m = { q, specific, order };
    if (!best || m.specific > best.specific || (m.specific === best.specific && m.q > best.q)) best = m;
  });
  return best;
}

export function isNavigation(headers: IncomingHttpHeaders): boolean {
  if (headers['sec-fetch-mode'] === 'navigate') return true;
  const accept = headers.accept;
  if (accept === undefined) return false;
  const html = match(accept, 'text/html');
  if (!html || html.q <= 0) return false;
  const json = match(accept, 'application/json');
  if (!json || json.q <= 0) return true;
  return (html.q - json.q || html.specific - json.specific || json.order - html.order) > 0;
}
