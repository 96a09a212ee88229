/**
 * Express's router stack as the API's Allow answers, its request metrics and the dashboard's 404s read it: a leaf,
 * so a reader of the routes imports none of the routes' own modules.
 */

/** A layer of the app's router stack: a route (`route` set), or a router or middleware (`handle.stack` for a router). */
export interface RouteLayer {
  route?: { path: unknown; methods: Record<string, boolean> };
  match?: (path: string) => unknown;
  handle?: { stack?: RouteLayer[] };
}

/** The route layers of a router stack, its routers' included, in the order they are tried. */
export function routeLayers(stack: readonly RouteLayer[] | undefined): (RouteLayer & { route: NonNullable<RouteLayer['route']> })[] {
  return (stack ?? []).flatMap((layer) => (layer.route ? [layer as RouteLayer & { route: NonNullable<RouteLayer['route']> }] : routeLayers(layer.handle?.stack)));
}

/** The app's router stack (Express's typings do not expose its layers; they are read as the router builds them). */
export function appStack(application: unknown): readonly RouteLayer[] | undefined {
  return (application as { router?: { stack?: RouteLayer[] } }).router?.stack;
}
