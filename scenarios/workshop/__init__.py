"""``parley workshop``: a live threat-model workshop, a projector page and one page per participant.

The room (:mod:`parley.scenarios.workshop.game`) runs real parties; the web app
(:mod:`parley.scenarios.workshop.app`, Starlette, the ``workshop`` extra) serves the pages;
:mod:`parley.scenarios.workshop.screenshots` refreshes the documentation's pictures of them.
"""
