# Tiny TCP proxy: listen on LPORT, forward to TPORT, log each direction raw per connection.
import socket, threading, sys, os
lport, tport, outdir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
os.makedirs(outdir, exist_ok=True)
n = [0]
def pump(src, dst, path):
    with open(path, 'wb') as f:
        while True:
            try:
                d = src.recv(65536)
            except OSError:
                break
            if not d: break
            f.write(d); f.flush()
            try: dst.sendall(d)
            except OSError: break
    try: dst.shutdown(socket.SHUT_WR)
    except OSError: pass
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', lport)); s.listen(16)
while True:
    c, _ = s.accept(); n[0] += 1; i = n[0]
    t = socket.create_connection(('127.0.0.1', tport))
    threading.Thread(target=pump, args=(c, t, f'{outdir}/conn{i}.solicitor-to-acceptor.bin'), daemon=True).start()
    threading.Thread(target=pump, args=(t, c, f'{outdir}/conn{i}.acceptor-to-solicitor.bin'), daemon=True).start()
