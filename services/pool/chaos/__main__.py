"""``python -m mockpool.pool.chaos --seeds 0-199``: the chaos campaign (chaos_campaign.py)."""

from ..chaos_campaign import main

raise SystemExit(main())
