import {
  createContext,
  useCallback,
  useContext,
  useEffect,
  useMemo,
  useState,
  type AnchorHTMLAttributes,
  type MouseEvent,
} from 'react';

/**
 * A router over the History API. Page addresses are the hosted platform's (`/{owner}/datasets/{slug}`,
 * `/{owner}/{project}/{model}`), so a link an
 * ultralytics client prints opens the right page, and every page has an address that can be bookmarked and shared.
 */
export type Route =
  | { page: 'home' }
  | { page: 'signin' }
  | { page: 'datasets'; owner: string }
  | { page: 'dataset'; owner: string; slug: string }
  | { page: 'image'; owner: string; slug: string; imageId: string }
  | { page: 'projects'; owner: string }
  | { page: 'hosts'; owner: string }
  | { page: 'jobs'; owner: string }
  | { page: 'deployments'; owner: string }
  | { page: 'deployment'; owner: string; deployment: string }
  | { page: 'members'; owner: string }
  | { page: 'keys'; owner: string }
  | { page: 'trash'; owner: string }
  | { page: 'credits'; owner: string }
  | { page: 'health'; owner: string }
  | { page: 'project'; owner: string; project: string }
  | { page: 'model'; owner: string; project: string; model: string }
  | { page: 'not-found'; path: string };

/** The workspace's pages of one name each (`/{owner}/{area}`). */
const AREA_PAGES = [
  'projects',
  'deployments',
  'hosts',
  'jobs',
  'members',
  'keys',
  'trash',
  'credits',
  'health',
] as const;
type AreaPage = (typeof AREA_PAGES)[number];

/** The workspace's own pages: a project of one of these names is reached through the API only. */
const AREAS = new Set<string>(['datasets', ...AREA_PAGES]);
const isAreaPage = (name: string | undefined): name is AreaPage =>
  (AREA_PAGES as readonly string[]).includes(name ?? '');

export function parseRoute(pathname: string): Route {
  const parts = pathname.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0) return { page: 'home' };
  if (parts.length === 1 && parts[0] === 'signin') return { page: 'signin' };
  const [owner, area, slug, images, imageId] = parts;
  if (owner && area === 'datasets' && parts.length === 2) return { page: 'datasets', owner };
  if (owner && area === 'datasets' && slug && parts.length === 3) return { page: 'dataset', owner, slug };
  if (owner && area === 'datasets' && slug && images === 'images' && imageId && parts.length === 5)
    return { page: 'image', owner, slug, imageId };
  if (owner && isAreaPage(area) && parts.length === 2) return { page: area, owner };
  if (owner && area === 'deployments' && slug && parts.length === 3)
    return { page: 'deployment', owner, deployment: slug };
  // Any other second name is a project (a project named as one of AREAS has no page of its own).
  if (owner && area && !AREAS.has(area)) {
    if (parts.length === 2) return { page: 'project', owner, project: area };
    if (slug && parts.length === 3) return { page: 'model', owner, project: area, model: slug };
  }
  return { page: 'not-found', path: pathname };
}

export function datasetsPath(owner: string): string {
  return `/${encodeURIComponent(owner)}/datasets`;
}

export function datasetPath(owner: string, slug: string): string {
  return `${datasetsPath(owner)}/${encodeURIComponent(slug)}`;
}

/** A workspace's page of one name: `/{owner}/projects`, `/{owner}/hosts`, … */
export function areaPath(owner: string, area: AreaPage): string {
  return `/${encodeURIComponent(owner)}/${area}`;
}

export function projectsPath(owner: string): string {
  return areaPath(owner, 'projects');
}

export function deploymentPath(owner: string, deployment: string): string {
  return `${areaPath(owner, 'deployments')}/${encodeURIComponent(deployment)}`;
}

export function projectPath(owner: string, project: string): string {
  return `/${encodeURIComponent(owner)}/${encodeURIComponent(project)}`;
}

export function modelPath(owner: string, project: string, model: string): string {
  return `${projectPath(owner, project)}/${encodeURIComponent(model)}`;
}

export function imagePath(owner: string, slug: string, imageId: string): string {
  return `${datasetPath(owner, slug)}/images/${encodeURIComponent(imageId)}`;
}

/**
 * A page with unsaved work sets this: moving to another page asks first (closing or reloading the tab asks through
 * the browser's own beforeunload prompt, which the page sets too).
 */
let leaveWarning: string | undefined;
export function setLeaveWarning(warning: string | undefined): void {
  leaveWarning = warning;
}

interface Navigation {
  route: Route;
  navigate: (path: string, options?: { replace?: boolean }) => void;
}

const NavigationContext = createContext<Navigation | undefined>(undefined);

export function RouterProvider({ children }: { children: React.ReactNode }) {
  const [pathname, setPathname] = useState(() => location.pathname);
  useEffect(() => {
    const onPop = () => setPathname(location.pathname);
    addEventListener('popstate', onPop);
    return () => removeEventListener('popstate', onPop);
  }, []);
  const navigate = useCallback((path: string, options: { replace?: boolean } = {}) => {
    if (leaveWarning && !confirm(leaveWarning)) return;
    leaveWarning = undefined;
    if (options.replace) history.replaceState(null, '', path);
    else history.pushState(null, '', path);
    setPathname(location.pathname);
    scrollTo(0, 0);
  }, []);
  const value = useMemo(() => ({ route: parseRoute(pathname), navigate }), [pathname, navigate]);
  return <NavigationContext.Provider value={value}>{children}</NavigationContext.Provider>;
}

export function useNavigation(): Navigation {
  const navigation = useContext(NavigationContext);
  if (!navigation) throw new Error('useNavigation outside RouterProvider');
  return navigation;
}

/** An ordinary link (open in a new tab works) that moves within the console without reloading it. */
export function Link({ href, ...rest }: AnchorHTMLAttributes<HTMLAnchorElement> & { href: string }) {
  const { navigate } = useNavigation();
  const onClick = (event: MouseEvent<HTMLAnchorElement>) => {
    if (
      event.defaultPrevented ||
      event.button !== 0 ||
      event.metaKey ||
      event.ctrlKey ||
      event.shiftKey ||
      event.altKey
    )
      return;
    event.preventDefault();
    navigate(href);
  };
  return <a href={href} onClick={onClick} {...rest} />;
}
