"""Russian date formats where Django's own read wrong: a day with its month in the genitive
("3 декабря", not "3 Декабрь", in the admin's date drill-down). The rest is Django's."""

MONTH_DAY_FORMAT = "j E"
