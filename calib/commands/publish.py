"""calib publish PARAMS.json -o BUNDLE [--samples CSV] [--session DIR]"""

from __future__ import annotations

import argparse

HELP = "bundle a parameter set with its samples table, report, manifest (sha256) and README for others"
DESCRIPTION = (
    "Write BUNDLE (a directory, or a .tar.gz archive when the name ends in .tar.gz or .tgz) holding the parameter "
    "file (parameters.json, byte for byte), the samples table it was fitted on (samples.csv), the HTML report "
    "(report/), the recovery report when the device was a virtual GPU, a README for the recipient and "
    "MANIFEST.json with the sha256 and size of every file and the toolkit version. The samples table is found as "
    "for `calib report` (beside the parameter file, the fit's provenance, or rebuilt from the session); "
    "--samples/--session name it. The bundle is verified (as `calib verify-bundle` does: checksums, schema, and "
    "a refit of the samples reproducing the parameters within their standard errors) before it is moved into "
    "place; a bundle that would not verify is not written.")


EPILOG = "example:\n  calib publish fitted/sim-gtx280.json -o gtx280-bundle.tar.gz --sign lab.key"

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("params", metavar="PARAMS.json", help="parameter file to publish")
    p.add_argument("-o", "--output", required=True, metavar="BUNDLE", help="bundle directory or .tar.gz to write")
    p.add_argument("--samples", default=None, metavar="CSV", help="samples table the parameters were fitted on")
    p.add_argument("--session", default=None, metavar="DIR", help="session directory the parameters were fitted from")
    p.add_argument("--force", action="store_true", help="replace an existing BUNDLE")
    p.add_argument("--sign", default=None, metavar="KEY",
                   help="Ed25519 private key (PEM; `calib keygen`) to sign MANIFEST.json with: recipients check it "
                        "with `calib verify-bundle BUNDLE --key KEY.pub`")


def run(args: argparse.Namespace) -> int:
    from calib.bundle import publish
    from calib.commands.verify_bundle import print_verification
    from calib.progress import StagedProgress, wants_progress

    # expected shares of the time (measured on the quick campaign's file, 15 s: loading the inputs 10 %,
    # the refit 10 %, the report and its figures 79 %, manifest and verification 1 %)
    with StagedProgress({"inputs": 0.10, "refit": 0.10, "report": 0.79, "manifest": 0.005, "verify": 0.005},
                        "publish", wants_progress(args)) as prog:
        prog.stage("inputs")
        out, ver = publish(args.params, args.output, samples=args.samples, session=args.session, force=args.force,
                           sign=args.sign, progress=prog.stage)
    if getattr(args, "quiet", False):
        return 0
    print(f"bundle: {out}")
    for rel, meta in ver.manifest["files"].items():
        if meta["role"] != "report":
            print(f"  {rel:16s} {meta['bytes']:>9d} B  sha256 {meta['sha256'][:16]}...  ({meta['role']})")
    n_rep = sum(1 for m in ver.manifest["files"].values() if m["role"] == "report")
    print(f"  report/          {n_rep} files")
    print_verification(ver)
    return 0
