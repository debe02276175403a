#!/usr/bin/env python3
"""RSS of `agent-pages serve --demo` before and after one client views every page of
N queries (the N commonest title words of the demo corpus) in both themes and as
JSON, with the result cache's gauges. Run from the repository root:

    cargo build --release
    python3 scripts/cache-rss.py target/release/agent-pages /tmp/demo.sqlite3 256
    python3 scripts/cache-rss.py target/release/agent-pages /tmp/demo.sqlite3 256 \\
        SEARCH_CACHE_MAX_BYTES=1024GiB

Extra arguments are VARIABLE=VALUE settings for the server. The first run imports
the demo corpus into the database; later runs reuse it. Prints one JSON line.
"""
import collections, gzip, http.client, json, os, re, socket, subprocess, sys, time
import urllib.parse

binary, db, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
extra = dict(a.split('=', 1) for a in sys.argv[4:])

counts = collections.Counter()
with gzip.open('src/demo/debian-pages.jsonl.gz', 'rt') as corpus:
    for line in corpus:
        counts.update(set(re.findall(r'[a-z]{4,}', json.loads(line)['title'].lower())))
words = [w for w, _ in counts.most_common(n)]


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


port, metrics_port = free_port(), free_port()
env = dict(os.environ, AGENT_PAGES_DATABASE=db, AGENT_PAGES_BIND=f'127.0.0.1:{port}',
           AGENT_PAGES_METRICS_BIND=f'127.0.0.1:{metrics_port}',
           SEARCH_RATE_PER_MINUTE='1000000', SEARCH_RATE_PER_HOUR='100000000',
           RUST_LOG='warn', **extra)
server = subprocess.Popen([binary, 'serve', '--demo'], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True)
for line in server.stdout:
    if line.startswith('listening on'):
        break


def rss_mb():
    for line in open(f'/proc/{server.pid}/status'):
        if line.startswith('VmRSS'):
            return int(line.split()[1]) / 1024


conn = http.client.HTTPConnection('127.0.0.1', port)


def view(q, page, theme=None, as_json=False):
    headers = {'Accept': 'application/json'} if as_json else {}
    if theme:
        headers['Cookie'] = f'theme={theme}'
    conn.request('GET', '/search?' + urllib.parse.urlencode({'q': q, 'page': page}),
                 headers=headers)
    r = conn.getresponse()
    body = r.read()
    assert r.status == 200, (r.status, q, page)
    return body


def cache_gauges():
    m = http.client.HTTPConnection('127.0.0.1', metrics_port)
    m.request('GET', '/metrics')
    text = m.getresponse().read().decode()
    return {l.split()[0]: float(l.split()[1]) for l in text.splitlines()
            if l.startswith('agent_pages_search_cache_')}


time.sleep(1)
before = rss_mb()
started, views, most = time.time(), 0, 0
for i, q in enumerate(words):
    first = json.loads(view(q, 1, as_json=True))
    views += 1
    for page in range(1, first['pages'] + 1):
        for theme in ('light', 'dark'):
            view(q, page, theme)
            views += 1
        if page > 1:
            view(q, page, as_json=True)
            views += 1
    if i % 16 == 15:
        most = max(most, cache_gauges()['agent_pages_search_cache_bytes'])
after = rss_mb()
gauges = cache_gauges()
print(json.dumps({
    'settings': extra, 'queries': n, 'views': views,
    'seconds': round(time.time() - started, 1),
    'rss_before_mb': round(before, 1), 'rss_after_mb': round(after, 1),
    'rss_growth_mb': round(after - before, 1),
    'cache_entries': gauges['agent_pages_search_cache_entries'],
    'cache_bytes_mb': round(gauges['agent_pages_search_cache_bytes'] / 2**20, 1),
    'cache_bytes_most_seen_mb': round(most / 2**20, 1),
}))
server.terminate()
server.wait()
