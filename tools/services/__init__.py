"""Services: the one home of each operation the admin, the commands and the API share."""
