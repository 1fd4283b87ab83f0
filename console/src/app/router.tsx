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
  | { page: 'project'; owner: string; project: string }
  | { page: 'model'; owner: string; project: string; model: string }
  | { page: 'not-found'; path: string };

/** The workspace's own pages: a project of one of these names is reached through the API only. */
const AREAS = new Set(['datasets', 'projects', 'hosts', 'jobs']);

export function parseRoute(pathname: string): Route {
  const parts = pathname.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0) return { page: 'home' };
  if (parts.length === 1 && parts[0] === 'signin') return { page: 'signin' };
  const [owner, area, slug, images, imageId] = parts;
  if (owner && area === 'datasets' && parts.length === 2) return { page: 'datasets', owner };
  if (owner && area === 'datasets' && slug && parts.length === 3) return { page: 'dataset', owner, slug };
  if (owner && area === 'datasets' && slug && images === 'images' && imageId && parts.length === 5)
    return { page: 'image', owner, slug, imageId };
  if (owner && area === 'projects' && parts.length === 2) return { page: 'projects', owner };
  if (owner && area === 'hosts' && parts.length === 2) return { page: 'hosts', owner };
  if (owner && area === 'jobs' && parts.length === 2) return { page: 'jobs', owner };
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

export function projectsPath(owner: string): string {
  return `/${encodeURIComponent(owner)}/projects`;
}

export function hostsPath(owner: string): string {
  return `/${encodeURIComponent(owner)}/hosts`;
}

export function jobsPath(owner: string): string {
  return `/${encodeURIComponent(owner)}/jobs`;
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
