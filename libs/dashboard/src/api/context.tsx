// The ApiClient and the signed-in state, shared through React context. A 401 from any call signs
// out: the client drops the key, this provider forgets every cached query and shows sign-in.
import { useQueryClient } from '@tanstack/react-query';
import {
  createContext,
  useCallback,
  useContext,
  useEffect,
  useMemo,
  useState,
  type ReactNode,
} from 'react';
import type { ApiClient } from './client';

interface Session {
  api: ApiClient;
  signedIn: boolean;
  /** Set when the last sign-out came from a 401 (the key was disabled or expired meanwhile). */
  expired: boolean;
  signIn: (key: string) => Promise<void>;
  signOut: () => void;
}

const SessionContext = createContext<Session | null>(null);

export function SessionProvider({ api, children }: { api: ApiClient; children: ReactNode }) {
  const queryClient = useQueryClient();
  const [signedIn, setSignedIn] = useState(() => api.apiKey !== null);
  const [expired, setExpired] = useState(false);

  useEffect(
    () =>
      api.onUnauthorized(() => {
        queryClient.clear();
        setExpired(true);
        setSignedIn(false);
      }),
    [api, queryClient],
  );

  const signIn = useCallback(
    async (key: string) => {
      await api.verifyKey(key);
      queryClient.clear();
      api.signIn(key);
      setExpired(false);
      setSignedIn(true);
    },
    [api, queryClient],
  );

  const signOut = useCallback(() => {
    api.signOut();
    queryClient.clear();
    setExpired(false);
    setSignedIn(false);
  }, [api, queryClient]);

  const value = useMemo(
    () => ({ api, signedIn, expired, signIn, signOut }),
    [api, signedIn, expired, signIn, signOut],
  );
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession outside SessionProvider');
  return session;
}

export function useApi(): ApiClient {
  return useSession().api;
}
