import { useEffect, useState } from 'react';

/** The current time, re-read every `everyMs`, for "5 s ago" texts between data refreshes. */
export function useNow(everyMs = 1_000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(timer);
  }, [everyMs]);
  return now;
}

/** Sets the browser tab's title for the page being shown. */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · Pipeline orchestration`;
  }, [title]);
}
