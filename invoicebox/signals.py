"""What the gateway tells a sandbox it talks to, without importing it (the sandbox app is
optional and receives these from its ready())."""

from django.dispatch import Signal

# A contour on the bundled sandbox was created or re-pointed: keyword arguments token,
# merchant_id, notification_url, own_account, claim_shared.
sandbox_contour_connected = Signal()
