/**
 * The sign-in routes of /tmp/auth-contract (GET/POST /api/auth/...), typed by hand until they are in the committed
 * OpenAPI document; then `npm run client` generates them into schema.d.ts and this file goes.
 */
export interface Session {
  username: string;
  /** The workspace slug used in page addresses. */
  owner: string;
  role: string;
  csrfToken: string;
  expiresAt: string;
}

interface ErrorBody {
  error: string;
}

interface JsonAnswer<T> {
  content: { 'application/json': T };
}

export interface AuthPaths {
  '/api/auth/providers': {
    get: {
      responses: { 200: JsonAnswer<{ password: boolean; oidc: { name: string } | null }> };
    };
  };
  '/api/auth/login': {
    post: {
      requestBody: { content: { 'application/json': { username: string; password: string; workspace?: string } } };
      responses: { 200: JsonAnswer<{ session: Session }>; 401: JsonAnswer<ErrorBody>; 429: JsonAnswer<ErrorBody> };
    };
  };
  '/api/auth/session': {
    get: { responses: { 200: JsonAnswer<{ session: Session }>; 401: JsonAnswer<ErrorBody> } };
  };
  '/api/auth/logout': {
    post: { responses: { 204: { content?: never } } };
  };
}
