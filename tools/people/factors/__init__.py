"""People's second factor: devices (TOTP, backup codes, passkeys), step-up, recovery.

Built on django-otp (TOTP and static devices, throttling, one use per TOTP step) and
django-otp-webauthn (passkeys as django-otp devices). devices.py enrolls and resets,
stepup.py holds the one rule "this needs a fresh factor", views.py the pages.
"""
