"""calib keygen -o KEY"""

from __future__ import annotations

import argparse

HELP = "make an Ed25519 key pair for signing published bundles (calib publish --sign KEY)"
DESCRIPTION = (
    "Write a new Ed25519 private key to KEY (PEM, PKCS#8, unencrypted, readable by its owner only) and its public "
    "key to KEY.pub (PEM). Sign bundles with `calib publish PARAMS.json -o BUNDLE --sign KEY` and hand KEY.pub to "
    "the recipients, who check with `calib verify-bundle BUNDLE --key KEY.pub`. The same pair can be made with "
    "OpenSSL: `openssl genpkey -algorithm ed25519 -out KEY` and `openssl pkey -in KEY -pubout -out KEY.pub`.")
EPILOG = "example:\n  calib keygen -o ~/.calib/lab.key     # then publish --sign ~/.calib/lab.key"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", required=True, metavar="KEY", help="private key file to write (KEY.pub beside it)")
    p.add_argument("--force", action="store_true", help="replace an existing key pair")


def run(args: argparse.Namespace) -> int:
    from calib.bundle import generate_key

    priv, pub, fp = generate_key(args.output, force=args.force)
    print(f"private key: {priv} (keep it secret; sign with calib publish --sign {priv})")
    print(f"public key:  {pub} (give it to recipients: calib verify-bundle BUNDLE --key {pub})")
    print(f"fingerprint: sha256 {fp}")
    return 0
