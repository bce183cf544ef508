"""calib samples SESSION_DIR -o SAMPLES.csv"""

from __future__ import annotations

import argparse

from calib.core.atomic import check_output_file, output_name

HELP = "turn one logged session into a samples table"


EPILOG = "example:\n  calib samples logs/gtx580-quick -o gtx580.samples.csv"

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("session", help="session directory (logs/<session>)")
    p.add_argument("-o", "--output", required=True, help="samples table to write (CSV)")
    p.add_argument("--power-stream", default=None, help="stream whose power_w is the GPU power (default: the NVML sensor)")


def run(args: argparse.Namespace) -> int:
    from calib.core.samples import write_samples
    from calib.core.session import read_session
    from calib.segment import session_samples

    check_output_file(args.output, not_in=(args.session,))  # never write into the session (its streams are the data)
    df = session_samples(read_session(args.session), power=args.power_stream)
    write_samples(df, args.output)
    roles = df["role"].value_counts().to_dict() if "role" in df.columns else {}
    print(f"{output_name(args.output)}: {len(df)} rows ({', '.join(f'{v} {k}' for k, v in roles.items())}), "
          f"units {', '.join(c[4:] for c in df.columns if c.startswith('act_'))}")
    return 0
