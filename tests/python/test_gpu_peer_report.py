"""bench/gpu_peer.py's Markdown table: ratios against the peers that ran, '-' for one that did not
(--no-compile) and 'failed' rows with the error; the script imports torch only when it measures."""
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_gpu_peer():
    spec = importlib.util.spec_from_file_location("gpu_peer", ROOT / "bench" / "gpu_peer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def result(runs):
    return {"gpu": "NVIDIA H200", "torch": "2.11.0", "model": "resnet50", "batch": 256,
            "runs": runs, "peak": {"fp16": 750e12}}


def test_ratios_against_eager_and_a_dash_without_compile():
    text = load_gpu_peer().report(result({"fp16": {
        "trainscale": {"ok": True, "images_per_s": 4000.0, "flops_per_sample": 12.3e9, "data_wait_median": 0.0001},
        "torch_eager": {"ok": True, "images_per_s": 5000.0}}}))
    rows = [line for line in text.splitlines() if line.startswith("| fp16")]
    assert rows[0].split("|")[3:6] == [" 4000 ", " 0.80x ", " - "]
    assert rows[1].split("|")[3:6] == [" 5000 ", " 1.00x ", " - "]
    assert "19.7%" in rows[0]  # 3 x 12.3 GFLOP x 4000 img/s of 750 TFLOP/s
    assert "nan" not in text


def test_a_failed_peer_is_a_row_with_its_error():
    text = load_gpu_peer().report(result({"fp16": {
        "trainscale": {"ok": False, "error": "exit 2: no CUDA device"},
        "torch_eager": {"ok": True, "images_per_s": 5000.0}}}))
    assert "| fp16 | trainscale | failed |" in text and "no CUDA device" in text


def test_searched_conv_times_are_summed_per_direction_and_noted():
    peer = load_gpu_peer()
    plans = ["conv:mb256_ic3oc64_ih224iw224_kh7kw7_sh2sw2_ph3pw3_g1_nobias f16 nhwc: "
             "fwd=IMPLICIT_PRECOMP_GEMM(tensor_op,find,1.250ms) bwd_data=ALGO_1(tensor_op,find,2.000ms) "
             "bwd_filter=ALGO_1(tensor_op,heuristic) ws=490.0MiB limit=512.0MiB planned_in=337.9ms",
             "bn:mb256c64_h112w112_relu f16 nhwc: SPATIAL_PERSISTENT (Ex, ReLU fused) ws=17127972 B reserve=0 B",
             "conv:mb256_ic64oc64_ih56iw56_kh1kw1_sh1sw1_ph0pw0_g1_nobias f16 nhwc: "
             "fwd=IMPLICIT_GEMM(tensor_op,find,0.250ms) bwd_data=ALGO_0(tensor_op,find,0.500ms) "
             "bwd_filter=ALGO_1(tensor_op,find,0.750ms) ws=2.0MiB limit=512.0MiB planned_in=56.9ms"]
    assert peer.searched_conv_ms(plans) == {"fwd": 1.5, "bwd_data": 2.5, "bwd_filter": 0.75}
    text = peer.report(result({"fp16": {
        "trainscale_log": {"ok": True, "images_per_s": 4000.0, "flops_per_sample": 12.3e9, "data_wait_median": 0.0,
                           "step_time_median": 0.064, "loss_reads": "log", "searched_conv_ms": {"fwd": 1.5}},
        "torch_eager": {"ok": True, "images_per_s": 5000.0}}}))
    row = next(line for line in text.splitlines() if "trainscale_log" in line)
    assert "loss_reads log" in row and "convs 1.5 of 64.0 ms by cuDNN's search" in row and "19.7%" in row


def test_variants_name_peers_and_carry_their_keys():
    peer = load_gpu_peer()
    assert peer.variants([]) == [("trainscale", ())]
    assert peer.variants(["log:loss_reads=log", "graph:cuda.conv_api=graph,loss_reads=log"]) == [
        ("trainscale_log", (("loss_reads", "log"),)),
        ("trainscale_graph", (("cuda.conv_api", "graph"), ("loss_reads", "log")))]
    try:
        peer.variants(["nokeys:loss_reads"])
        raise AssertionError("a key without a value is refused")
    except SystemExit as e:
        assert "NAME:KEY=VALUE" in str(e)
