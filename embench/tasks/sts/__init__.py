"""STS tasks: datasets as rows of data (``datasets``), one reader (``reader``), one scorer (``scoring``)."""
