"""Blob storage (dataset.storage: blob) against real servers on 127.0.0.1: moto's S3 server (the
S3 API with SigV4 checked by the server: IAM credentials, auth switched on after set-up), nginx
serving a directory (Range GETs, the JSON autoindex; plain HTTP and HTTPS with a certificate of a
test CA made by openssl) and a small Python server that fails on cue.
Fashion-MNIST idx files (a subset, raw) and a jpeg_dir tree (listed through nginx's JSON
autoindex and S3's ListObjectsV2) read from blob storage train to the bit-identical loss
trajectory of the same files on local storage; 403, 404, a server that keeps failing and one
killed mid-run end with exit 1 naming the URL, never the secret."""
import gzip
import http.server
import json
import os
import pathlib
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request

import h5py
import numpy as np
import pytest

from trainscale_cli import FMNIST, REPO, env, require_binary, write_config

TRAIN_SAMPLES, TEST_SAMPLES = 256, 64
SECRET = "s3cr3t-never-in-logs/Zq9+xYw"  # replaced by moto's generated secret for the IAM user
BUCKET = "datasets"
MOTO_SERVER = pathlib.Path(sys.executable).parent / "moto_server"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"

RUN = """\
model: lenet
dataset: {{name: fashion_mnist, format: idx, root: "{root}", storage: {storage}, loader_threads: 3{extra}}}
batch_per_worker: 16
lr: 0.05
momentum: 0.9
steps: {steps}
threads: 1
eval: {{every_epochs: 0}}
log_every: 1
seed: 3
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, proc, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{what} exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    pytest.fail(f"{what} did not listen on 127.0.0.1:{port} within {timeout} s")


def stop(proc):
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)


def write_idx_subset(dst, prefix, count):
    """The first `count` samples of Fashion-MNIST's `prefix` split as raw (not gzipped) idx files."""
    with gzip.open(FMNIST / f"{prefix}-images-idx3-ubyte.gz") as f:
        magic, _, rows, cols = struct.unpack(">IIII", f.read(16))
        pixels = f.read(count * rows * cols)
    (dst / f"{prefix}-images-idx3-ubyte").write_bytes(struct.pack(">IIII", magic, count, rows, cols) + pixels)
    with gzip.open(FMNIST / f"{prefix}-labels-idx1-ubyte.gz") as f:
        magic, _ = struct.unpack(">II", f.read(8))
        labels = f.read(count)
    (dst / f"{prefix}-labels-idx1-ubyte").write_bytes(struct.pack(">II", magic, count) + labels)


@pytest.fixture(scope="module")
def subset(tmp_path_factory):
    if not (FMNIST / "train-images-idx3-ubyte.gz").exists():
        pytest.skip(f"Fashion-MNIST is not installed at {FMNIST} (scripts/setup.sh)")
    d = tmp_path_factory.mktemp("fmnist_subset")
    write_idx_subset(d, "train", TRAIN_SAMPLES)
    write_idx_subset(d, "t10k", TEST_SAMPLES)
    return d


def blob_env(**aws):
    """The environment of a run: no AWS_* but `aws`, no proxy (libcurl honours them) and no
    CURL_CA_BUNDLE (trainscale honours it)."""
    e = env()
    for k in [k for k in e if k.startswith("AWS_") or k == "CURL_CA_BUNDLE"
              or k.lower() in ("http_proxy", "https_proxy", "all_proxy")]:
        del e[k]
    e.update(aws)
    return e


def trainscale_run(tmp, root, storage="blob", steps=8, extra="", run_env=None, name="run"):
    cfg = write_config(tmp / f"{name}.yaml", RUN.format(root=root, storage=storage, steps=steps, extra=extra))
    out = tmp / f"{name}_out"
    proc = subprocess.run([str(require_binary()), "run", "--config", str(cfg), "--out", str(out)],
                          capture_output=True, text=True, env=run_env or blob_env(), timeout=300, cwd=REPO)
    return proc, out


def losses(out):
    files = sorted(pathlib.Path(out).glob("*.h5"))
    assert len(files) == 1, files
    with h5py.File(files[0], "r") as f:
        return f["train/loss"][:], f["config"].attrs["dataset.storage"]


@pytest.fixture(scope="module")
def local_losses(subset, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("local")
    proc, out = trainscale_run(tmp, subset, storage="local")
    assert proc.returncode == 0, proc.stderr
    return losses(out)[0]


# ---- S3: moto -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def moto(subset, tmp_path_factory):
    """moto's S3 server with the subset uploaded under s3://datasets/fmnist/ and an IAM user
    allowed to read it; authentication is switched on after the set-up."""
    if not MOTO_SERVER.exists():
        pytest.skip(f"moto is not installed ({MOTO_SERVER}; scripts/setup.sh installs moto[server])")
    boto3 = pytest.importorskip("boto3")
    port = free_port()
    log = open(tmp_path_factory.mktemp("moto") / "moto.log", "w")
    proc = subprocess.Popen([str(MOTO_SERVER), "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=log,
                            env=blob_env())
    try:
        wait_for_port(port, proc, "moto_server")
        endpoint = f"http://127.0.0.1:{port}"
        setup = dict(endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="setup",
                     aws_secret_access_key="setup")
        iam = boto3.client("iam", **setup)
        iam.create_user(UserName="reader")
        key = iam.create_access_key(UserName="reader")["AccessKey"]
        iam.put_user_policy(UserName="reader", PolicyName="read", PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
        s3 = boto3.client("s3", **setup)
        s3.create_bucket(Bucket=BUCKET)
        for f in sorted(subset.iterdir()):
            s3.upload_file(str(f), BUCKET, f"fmnist/{f.name}")
        # From here on every request must be signed by a known key (moto's reset-auth).
        urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset-auth", data=b"0", method="POST",
                                                      headers={"Content-Type": "text/plain"}))
        yield {"endpoint": endpoint, "key": key["AccessKeyId"], "secret": key["SecretAccessKey"]}
    finally:
        stop(proc)
        log.close()


def moto_env(moto, secret=None):
    return blob_env(AWS_ACCESS_KEY_ID=moto["key"], AWS_SECRET_ACCESS_KEY=secret or moto["secret"],
                    AWS_REGION="us-east-1")


def assert_secret_absent(secret, proc, out):
    assert secret not in proc.stdout and secret not in proc.stderr
    for f in pathlib.Path(out).rglob("*"):
        if f.is_file():
            assert secret.encode() not in f.read_bytes(), f"the secret is in {f}"


def test_s3_trains_like_local_storage(moto, local_losses, tmp_path):
    extra = f", endpoint: \"{moto['endpoint']}\""
    proc, out = trainscale_run(tmp_path, f"s3://{BUCKET}/fmnist", extra=extra, run_env=moto_env(moto))
    assert proc.returncode == 0, proc.stderr
    got, storage = losses(out)
    assert storage == "blob"
    np.testing.assert_array_equal(got, local_losses)  # the same bytes: the same trajectory
    with h5py.File(next(pathlib.Path(out).glob("*.h5"))) as f:
        assert (f["io"].attrs["endpoint"], f["io"].attrs["endpoint_source"]) == (moto["endpoint"], "dataset.endpoint")
    assert_secret_absent(moto["secret"], proc, out)


def test_s3_endpoint_from_the_environment(moto, local_losses, tmp_path):
    e = moto_env(moto)
    e["AWS_ENDPOINT_URL"] = moto["endpoint"]
    proc, out = trainscale_run(tmp_path, f"s3://{BUCKET}/fmnist/", run_env=e)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(losses(out)[0], local_losses)
    with h5py.File(next(pathlib.Path(out).glob("*.h5"))) as f:  # the run file says where it read
        assert (f["io"].attrs["endpoint"], f["io"].attrs["endpoint_source"]) == (moto["endpoint"], "AWS_ENDPOINT_URL")


def test_s3_wrong_secret_is_403_naming_the_url_not_the_secret(moto, tmp_path):
    wrong = "wrong-secret-Qx7/aB+cd"
    extra = f", endpoint: \"{moto['endpoint']}\""
    proc, out = trainscale_run(tmp_path, f"s3://{BUCKET}/fmnist", extra=extra, run_env=moto_env(moto, wrong))
    assert proc.returncode == 1, proc.stderr
    assert f"s3://{BUCKET}/fmnist/" in proc.stderr and "access denied (HTTP 403" in proc.stderr, proc.stderr
    assert "AWS_SECRET_ACCESS_KEY" in proc.stderr  # what to check, by name
    assert_secret_absent(wrong, proc, out)
    assert not list(pathlib.Path(out).glob("*.h5"))


def test_s3_missing_key_is_404_naming_the_url(moto, tmp_path):
    extra = f", endpoint: \"{moto['endpoint']}\""
    proc, out = trainscale_run(tmp_path, f"s3://{BUCKET}/absent", extra=extra, run_env=moto_env(moto))
    assert proc.returncode == 1, proc.stderr
    assert f"s3://{BUCKET}/absent/train-images-idx3-ubyte" in proc.stderr and "not found" in proc.stderr, proc.stderr
    assert_secret_absent(moto["secret"], proc, out)


# ---- plain HTTP: nginx --------------------------------------------------------------------

NGINX_CONF = """\
daemon off;
master_process off;
worker_processes 1;
error_log {prefix}/error.log;
pid {prefix}/nginx.pid;
events {{ worker_connections 64; }}
http {{
  access_log {prefix}/access.log;
  client_body_temp_path {prefix}/body; proxy_temp_path {prefix}/proxy; fastcgi_temp_path {prefix}/fastcgi;
  uwsgi_temp_path {prefix}/uwsgi; scgi_temp_path {prefix}/scgi;
  server {{
    listen 127.0.0.1:{port};
    root {root};
    location / {{ autoindex on; autoindex_format json; }}
  }}
}}
"""


def start_nginx(tmp, root):
    if not os.path.exists(NGINX):
        pytest.skip("nginx is not installed (Debian package nginx; scripts/setup.sh)")
    port = free_port()
    conf = write_config(tmp / "nginx.conf", NGINX_CONF.format(prefix=tmp, port=port, root=root))
    proc = subprocess.Popen([NGINX, "-c", str(conf), "-p", str(tmp)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    wait_for_port(port, proc, "nginx")
    return proc, f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def nginx(subset, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nginx")
    root = tmp / "www"
    (root / "fmnist").mkdir(parents=True)
    for f in subset.iterdir():
        shutil.copy(f, root / "fmnist" / f.name)
    (root / "fmnist" / "sub").mkdir()
    proc, url = start_nginx(tmp, root)
    yield {"url": url, "root": root}
    stop(proc)


def test_http_range_reads_are_byte_exact(nginx, local_losses, tmp_path):
    proc, out = trainscale_run(tmp_path, f"{nginx['url']}/fmnist")
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(losses(out)[0], local_losses)


def test_http_gzip_files_read_whole_in_parallel_ranges(nginx, tmp_path):
    # The full .gz files (26 MB, 4 MB, ...) are read whole at open: reads above 4 MiB go out as
    # parallel 4 MiB ranges. gzip's CRC and the same trajectory as the local files check the bytes.
    gz = nginx["root"] / "gz"
    gz.mkdir(exist_ok=True)
    for f in FMNIST.glob("*.gz"):
        shutil.copy(f, gz / f.name)
    local, local_out = trainscale_run(tmp_path, FMNIST, storage="local", steps=3, name="local")
    assert local.returncode == 0, local.stderr
    proc, out = trainscale_run(tmp_path, f"{nginx['url']}/gz", steps=3, name="blob")
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(losses(out)[0], losses(local_out)[0])


def test_http_directory_exists_and_missing_file_names_url(nginx, tmp_path):
    proc, _ = trainscale_run(tmp_path, f"{nginx['url']}/fmnist/sub")
    assert proc.returncode == 1
    assert f"{nginx['url']}/fmnist/sub/train-images-idx3-ubyte" in proc.stderr and "not found" in proc.stderr
    assert "does not exist" not in proc.stderr, proc.stderr  # the directory itself exists
    proc, _ = trainscale_run(tmp_path, f"{nginx['url']}/nothing")
    assert proc.returncode == 1 and f"directory {nginx['url']}/nothing does not exist" in proc.stderr, proc.stderr


# ---- HTTPS: nginx with a certificate of a test CA ------------------------------------------

NGINX_TLS_SERVER = """\
  server {{
    listen 127.0.0.1:{port} ssl;
    ssl_certificate {cert};
    ssl_certificate_key {key};
    root {root};
    location / {{ autoindex on; autoindex_format json; }}
  }}
}}
"""


def make_test_ca_and_certificate(tmp):
    """A CA and a certificate it signed for 127.0.0.1 (openssl). Returns (ca.pem, cert, key)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed (Debian package openssl)")
    ca_key, ca, key, csr, cert = (tmp / n for n in ("ca.key", "ca.pem", "server.key", "server.csr", "server.pem"))
    ext = tmp / "san.ext"
    ext.write_text("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n")
    for cmd in (
        ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", ca_key,
         "-out", ca, "-days", "2", "-subj", "/CN=trainscale test CA"],
        ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", csr,
         "-subj", "/CN=127.0.0.1"],
        ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert, "-days", "2",
         "-extfile", ext],
    ):
        subprocess.run(["openssl", *map(str, cmd)], check=True, capture_output=True)
    return ca, cert, key


@pytest.fixture(scope="module")
def nginx_tls(nginx, tmp_path_factory):
    if not os.path.exists(NGINX):
        pytest.skip("nginx is not installed (Debian package nginx; scripts/setup.sh)")
    tmp = tmp_path_factory.mktemp("nginx_tls")
    ca, cert, key = make_test_ca_and_certificate(tmp)
    port = free_port()
    http_block = NGINX_CONF.format(prefix=tmp, port=port, root=nginx["root"]).rsplit("  server {", 1)[0]
    conf = write_config(tmp / "nginx.conf", http_block + NGINX_TLS_SERVER.format(port=port, cert=cert, key=key,
                                                                                 root=nginx["root"]))
    proc = subprocess.Popen([NGINX, "-c", str(conf), "-p", str(tmp)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    wait_for_port(port, proc, "nginx (TLS)")
    yield {"url": f"https://127.0.0.1:{port}", "ca": ca}
    stop(proc)


def test_https_range_reads_with_the_ca_bundle_are_byte_exact(nginx_tls, local_losses, tmp_path):
    proc, out = trainscale_run(tmp_path, f"{nginx_tls['url']}/fmnist",
                               run_env=blob_env(AWS_CA_BUNDLE=str(nginx_tls["ca"])))
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(losses(out)[0], local_losses)
    # curl's variable works too when AWS_CA_BUNDLE is unset.
    proc, out = trainscale_run(tmp_path, f"{nginx_tls['url']}/fmnist", steps=2, name="curl_var",
                               run_env=blob_env(CURL_CA_BUNDLE=str(nginx_tls["ca"])))
    assert proc.returncode == 0, proc.stderr


def test_https_untrusted_certificate_fails_at_once_saying_what_to_set(nginx_tls, tmp_path):
    start = time.monotonic()
    proc, out = trainscale_run(tmp_path, f"{nginx_tls['url']}/fmnist")  # the system's CAs only
    assert proc.returncode == 1, proc.stderr
    assert nginx_tls["url"] in proc.stderr and "not trusted" in proc.stderr and "AWS_CA_BUNDLE" in proc.stderr, \
        proc.stderr
    assert "retry" not in proc.stderr and time.monotonic() - start < 20, proc.stderr  # no retry can fix it
    assert not list(pathlib.Path(out).glob("*.h5"))
    missing = trainscale_run(tmp_path, f"{nginx_tls['url']}/fmnist", name="bad_ca",
                             run_env=blob_env(AWS_CA_BUNDLE=str(tmp_path / "absent.pem")))[0]
    assert missing.returncode == 1 and "absent.pem (AWS_CA_BUNDLE)" in missing.stderr, missing.stderr


def test_storage_and_root_must_agree(tmp_path):
    proc, _ = trainscale_run(tmp_path, "http://127.0.0.1:9/fmnist", storage="local")
    assert proc.returncode == 2 and "is a URL; set dataset.storage: blob" in proc.stderr, proc.stderr
    proc, _ = trainscale_run(tmp_path, "/usr/share/datasets/fashion-mnist")
    assert proc.returncode == 2 and "is not a URL, and storage blob reads URLs" in proc.stderr, proc.stderr


def test_sweep_site_storage_blob_reads_the_url(nginx, tmp_path):
    # A site entry `blob: {}` keeps the run's storage: the task reads dataset.root through it.
    site = write_config(tmp_path / "site.yaml", "scheduler: local\nmpi: {openmpi: {}}\nstorage: {local: {}, blob: {}}\n")
    write_config(tmp_path / "base.yaml", RUN.format(root=f"{nginx['url']}/fmnist", storage="blob", steps=8, extra=""))
    sweep = write_config(tmp_path / "sweep.yaml", "campaign: blob\nbase: base.yaml\n")
    camp = tmp_path / "campaign"
    binary = str(require_binary())
    res = subprocess.run([binary, "sweep", "expand", str(sweep), "--site", str(site), "--out", str(camp)],
                         capture_output=True, text=True, env=blob_env(), cwd=REPO, timeout=60)
    assert res.returncode == 0, res.stderr
    access_log = nginx["root"].parent / "access.log"
    access_log.write_text("")  # nginx appends (O_APPEND): what follows is this run's
    res = subprocess.run([binary, "run", "--manifest", str(camp), "--index", "0"], capture_output=True, text=True,
                         env=blob_env(), cwd=REPO, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert losses(camp / "runs")[1] == "blob"  # a derived seed: its own trajectory
    assert "GET /fmnist/train-images-idx3-ubyte" in access_log.read_text()


def test_http_server_killed_mid_run_exit_1_naming_url(subset, tmp_path):
    root = tmp_path / "www"
    shutil.copytree(subset, root / "fmnist")
    server, url = start_nginx(tmp_path, root)
    cfg = write_config(tmp_path / "long.yaml", RUN.format(root=f"{url}/fmnist", storage="blob", steps=100000, extra=""))
    proc = subprocess.Popen([str(require_binary()), "run", "--config", str(cfg), "--out", str(tmp_path / "out")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=blob_env(), cwd=REPO)
    try:
        for line in proc.stdout:  # training has started once a step is logged
            if line.startswith("step"):
                break
        server.kill()
        server.wait()
        _, stderr = proc.communicate(timeout=120)
    finally:
        stop(server)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, stderr
    assert f"{url}/fmnist/" in stderr and "after 5 attempt(s)" in stderr, stderr
    assert "retry 4 of 4" in stderr
    assert (tmp_path / "out").exists() and not list((tmp_path / "out").glob("*.h5"))


# ---- a server that fails twice, then serves ----------------------------------------------

class FlakyHandler(http.server.BaseHTTPRequestHandler):
    """Serves files of `root` with Range support; the first `failures` GETs answer 500."""
    root = None
    failures = 0
    seen = []
    lock = threading.Lock()

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.respond(head=True)

    def do_GET(self):
        with self.lock:
            self.seen.append(self.path)
            fail = type(self).failures > 0
            type(self).failures -= int(fail)
        if fail:
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.respond(head=False)

    def respond(self, head):
        path = self.root / self.path.lstrip("/")
        if not path.is_file():
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = path.read_bytes()
        rng = self.headers.get("Range")
        status, body = 200, data
        if rng and not head:
            first, last = (int(x) for x in rng.split("=")[1].split("-"))
            status, body = 206, data[first:last + 1]
        self.send_response(status)
        self.send_header("ETag", '"fixed"')
        self.send_header("Content-Length", str(len(data) if head else len(body)))
        if status == 206:
            self.send_header("Content-Range", f"bytes {first}-{last}/{len(data)}")
        self.end_headers()
        if not head:
            self.wfile.write(body)


def test_http_500_twice_is_retried_and_counted(subset, local_losses, tmp_path):
    FlakyHandler.root, FlakyHandler.failures, FlakyHandler.seen = subset, 2, []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FlakyHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        proc, out = trainscale_run(tmp_path, f"http://127.0.0.1:{server.server_port}")
    finally:
        server.shutdown()
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(losses(out)[0], local_losses)
    assert proc.stderr.count(": HTTP 500; retry ") == 2, proc.stderr
    assert "retry 1 of 4" in proc.stderr and "retry 2 of 4" in proc.stderr
    with h5py.File(next(pathlib.Path(out).glob("*.h5"))) as f:
        assert f["io"].attrs["blob_retries"] == 2


# ---- a server that answers and then trickles the body ---------------------------------------

class TrickleHandler(FlakyHandler):
    """Answers HEAD at once; the first `trickles` GETs send their headers, then 1 byte a second
    (curl's low-speed limit of 1 byte/s over 30 s never trips); later GETs are served whole."""
    trickles = 0

    def do_GET(self):
        with self.lock:
            self.seen.append(self.path)
            trickle = type(self).trickles > 0
            type(self).trickles -= int(trickle)
        if not trickle:
            self.respond(head=False)
            return
        self.send_response(200)
        self.send_header("ETag", '"fixed"')
        self.send_header("Content-Length", "1000000")
        self.end_headers()
        try:
            for _ in range(600):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(1)
        except OSError:  # the client gave up: what the deadline is for
            pass


def test_a_trickled_get_ends_at_its_deadline_and_is_retried(subset, local_losses, tmp_path):
    TrickleHandler.root, TrickleHandler.trickles, TrickleHandler.seen = subset, 2, []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), TrickleHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:  # a 1 s deadline + 1 s per MiB: the trickled requests end in about a second each
        proc, out = trainscale_run(tmp_path, f"http://127.0.0.1:{server.server_port}",
                                   extra=", blob_deadline_s: 1, blob_min_kib_s: 1024")
    finally:
        server.shutdown()
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(losses(out)[0], local_losses)
    assert proc.stderr.count("not done within the request's deadline of ") == 2, proc.stderr
    assert "retry 1 of 4" in proc.stderr and "retry 2 of 4" in proc.stderr, proc.stderr
    with h5py.File(next(pathlib.Path(out).glob("*.h5"))) as f:
        assert f["io"].attrs["blob_retries"] == 2
        assert f["io"].attrs["blob_deadline_s"] == 1 and f["io"].attrs["blob_min_kib_s"] == 1024
        assert float(f["config"].attrs["dataset.blob_deadline_s"]) == 1


def test_a_server_that_always_trickles_ends_the_run_with_exit_1(subset, tmp_path):
    TrickleHandler.root, TrickleHandler.trickles, TrickleHandler.seen = subset, 10 ** 6, []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), TrickleHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:  # before the deadline, this run hung for ever with nothing printed
        proc, _ = trainscale_run(tmp_path, f"http://127.0.0.1:{server.server_port}",
                                 extra=", blob_deadline_s: 1, blob_min_kib_s: 1024")
    finally:
        server.shutdown()
    assert proc.returncode == 1, proc.stderr
    assert "after 5 attempt(s)" in proc.stderr and "deadline of " in proc.stderr, proc.stderr
    assert f"http://127.0.0.1:{server.server_port}/" in proc.stderr


# ---- jpeg_dir: a format that lists directories ---------------------------------------------

JPEG_RUN = """\
model: mlp
dataset: {{name: imagefolder, format: jpeg_dir, root: "{root}", storage: {storage}, loader_threads: 2{extra}}}
batch_per_worker: 8
epochs: 1
lr: 0.05
threads: 1
eval: {{every_epochs: 0}}
seed: 5
"""


def test_jpeg_dir_lists_through_nginx_and_s3(nginx, moto, tmp_path):
    tree = tmp_path / "jpegs"
    made = subprocess.run([str(require_binary()), "data", "make-synthetic-jpeg", "--out", str(tree), "--classes", "3",
                           "--per-class", "8", "--val-per-class", "2", "--seed", "4"], capture_output=True, text=True,
                          env=blob_env(), cwd=REPO, timeout=120)
    assert made.returncode == 0, made.stderr

    def jpeg_run(root, storage, name, run_env=None, extra=""):
        cfg = write_config(tmp_path / f"{name}.yaml", JPEG_RUN.format(root=root, storage=storage, extra=extra))
        proc = subprocess.run([str(require_binary()), "run", "--config", str(cfg), "--out", str(tmp_path / name)],
                              capture_output=True, text=True, env=run_env or blob_env(), timeout=300, cwd=REPO)
        assert proc.returncode == 0, proc.stderr
        return losses(tmp_path / name)[0]

    local = jpeg_run(tree, "local", "local")
    shutil.copytree(tree, nginx["root"] / "jpegs")
    np.testing.assert_array_equal(jpeg_run(f"{nginx['url']}/jpegs", "blob", "http"), local)
    boto3 = pytest.importorskip("boto3")
    s3 = boto3.client("s3", endpoint_url=moto["endpoint"], region_name="us-east-1", aws_access_key_id=moto["key"],
                      aws_secret_access_key=moto["secret"])
    for f in sorted(tree.rglob("*.jpg")):
        s3.upload_file(str(f), BUCKET, f"jpegs/{f.relative_to(tree)}")
    got = jpeg_run(f"s3://{BUCKET}/jpegs", "blob", "s3", moto_env(moto), f", endpoint: \"{moto['endpoint']}\"")
    np.testing.assert_array_equal(got, local)


def test_a_site_maps_blob_storage_to_a_url_prefix(nginx, local_losses, tmp_path):
    """A campaign's site may give `blob` a URL prefix (`storage: {blob: {path: URL}}`): the task
    reads <URL>/<last part of dataset.root> through the blob storage, as a run given the URL."""
    base = write_config(tmp_path / "base.yaml", RUN.format(root="/data/sets/fmnist", storage="blob", steps=8, extra=""))
    sweep = write_config(tmp_path / "sweep.yaml", f"campaign: blobsite\nbase: {base}\nmatrix: {{seed: [3]}}\n")
    site = write_config(tmp_path / "site.yaml", "scheduler: local\nmpi: {openmpi: {launcher: mpirun, launcher_args: "
                        "[--oversubscribe, --bind-to, none]}}\nenv: {OMPI_ALLOW_RUN_AS_ROOT: '1', "
                        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: '1'}\n"
                        f"storage: {{local: {{}}, blob: {{path: '{nginx['url']}'}}}}\n")
    camp = tmp_path / "camp"
    binary = str(require_binary())
    for args in (["sweep", "expand", sweep, "--site", site, "--out", camp], ["sweep", "submit", camp]):
        proc = subprocess.run([binary] + [str(a) for a in args], capture_output=True, text=True, env=blob_env(),
                              timeout=300, cwd=REPO)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    loss, storage = losses(camp / "runs")
    np.testing.assert_array_equal(loss, local_losses)
    assert (storage.decode() if isinstance(storage, bytes) else storage) == "blob"
