"""trainscale_analysis: load trainscale campaigns (HDF5 schema trainscale-run/1), compute
scaling and loss-area metrics, plot them and write self-contained HTML reports.

    from trainscale_analysis import load_campaigns, loss_area_winners
    df = load_campaigns(["campaigns/quickstart"])
    loss_area_winners(df, threshold=0.5, by="workers")

Command line: python3 -m trainscale_analysis report CAMPAIGN_DIR ... -o reports/NAME.html
"""
from .load import SCHEMA, CampaignError, SchemaError, load_campaigns, load_series, load_timing
from .metrics import loss_area, loss_area_winners

__all__ = ["SCHEMA", "CampaignError", "SchemaError", "load_campaigns", "load_series",
           "load_timing", "loss_area", "loss_area_winners"]
__version__ = "0.1.0"
