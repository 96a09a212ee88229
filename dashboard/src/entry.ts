/** The page's module script: starts the dashboard in #app (main.ts itself does nothing when imported). */
import { start } from './main.ts';

start(document.getElementById('app') as HTMLElement);
